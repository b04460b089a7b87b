package schemas

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

const orderSchema = `{
  "type": "object",
  "properties": {
    "orderId": {"type": "string", "minLength": 3},
    "quantity": {"type": "integer", "minimum": 1},
    "email": {"type": "string", "format": "email"},
    "address": {
      "type": "object",
      "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
      "required": ["zip"],
      "additionalProperties": false
    },
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["orderId"]
}`

func decodeInput(t *testing.T, doc string, useNumber bool) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	if useNumber {
		dec.UseNumber()
	}
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

func TestInputValidate(t *testing.T) {
	t.Parallel()
	s, err := CompileInput(json.RawMessage(orderSchema))
	require.NoError(t, err)
	tests := []struct {
		name  string
		input string
		want  []Problem
	}{
		{"valid", `{"orderId": "1001", "quantity": 2, "email": "a@b.example", "address": {"zip": "12345"}, "tags": ["x"]}`, nil},
		{"integral float is an integer", `{"orderId": "1001", "quantity": 2.0}`, nil},
		{"missing required", `{}`, []Problem{{Path: "/orderId", Message: `"orderId" is required`}}},
		{"wrong type", `{"orderId": 1001}`, []Problem{{Path: "/orderId", Message: "got number, want string"}}},
		{"not an object", `[1]`, []Problem{{Path: "", Message: "got array, want object"}}},
		{"several at once", `{"orderId": "1", "quantity": 0, "email": "nope", "address": {"zip": "1", "street": "x"}, "tags": [1]}`, []Problem{
			{Path: "/address/street", Message: `"street" is not an allowed property`},
			{Path: "/address/zip", Message: "'1' does not match pattern '^[0-9]{5}$'"},
			{Path: "/email", Message: "'nope' is not valid email: missing @"},
			{Path: "/orderId", Message: "minLength: got 1, want 3"},
			{Path: "/quantity", Message: "minimum: got 0, want 1"},
			{Path: "/tags/0", Message: "got number, want string"},
		}},
		{"fraction is not an integer", `{"orderId": "1001", "quantity": 1.5}`, []Problem{{Path: "/quantity", Message: "got number, want integer"}}},
		{"nested required", `{"orderId": "1001", "address": {}}`, []Problem{{Path: "/address/zip", Message: `"zip" is required`}}},
	}
	for _, tc := range tests {
		for _, useNumber := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				require.Equal(t, tc.want, s.Validate(decodeInput(t, tc.input, useNumber)))
			})
		}
	}
}

func TestCompileInputInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		path   string
	}{
		{"bad type", `{"type": "thing"}`, "/type"},
		{"not JSON", `{"type": `, ""},
		{"remote ref", `{"$ref": "https://example.com/schema.json"}`, ""},
		{"local file ref", `{"$ref": "file:///etc/passwd"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := CompileInput(json.RawMessage(tc.schema))
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.NotEmpty(t, verr.Problems)
			require.Equal(t, tc.path, verr.Problems[0].Path)
		})
	}
}

func TestInputLocalRefsWork(t *testing.T) {
	t.Parallel()
	s, err := CompileInput(json.RawMessage(`{
		"type": "object",
		"$defs": {"id": {"type": "string"}},
		"properties": {"a": {"$ref": "#/$defs/id"}}
	}`))
	require.NoError(t, err)
	require.Nil(t, s.Validate(map[string]any{"a": "x"}))
	require.Equal(t, []Problem{{Path: "/a", Message: "got boolean, want string"}}, s.Validate(map[string]any{"a": true}))
}
