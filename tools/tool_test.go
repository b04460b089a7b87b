package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

func decode(t *testing.T, doc string) *schemas.Definition {
	t.Helper()
	def, err := schemas.Decode([]byte(doc))
	require.NoError(t, err)
	return def
}

func TestAnnotationsAreAlwaysExplicit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                                      string
		doc                                       string
		readOnly, destructive, idempotent, remote bool
	}{
		{"defaults without outside steps", `{"name":"a","input":{"type":"object"},"steps":[{"id":"s","set":1}]}`, false, true, false, false},
		{"http step reaches out", `{"name":"a","input":{"type":"object"},"steps":[{"id":"s","http":{"url":"http://x"}}]}`, false, true, false, true},
		{"start token is idempotent", `{"name":"a","input":{"type":"object"},"start":{"token":"t","onConflict":"adopt"},"steps":[{"id":"s","set":1}]}`, false, true, true, false},
		{"read-only is not destructive", `{"name":"a","input":{"type":"object"},"annotations":{"readOnly":true},"steps":[{"id":"s","set":1}]}`, true, false, true, false},
		{"definition wins", `{"name":"a","input":{"type":"object"},"start":{"token":"t"},"annotations":{"destructive":false,"idempotent":false,"openWorld":true},"steps":[{"id":"s","set":1}]}`, false, false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, err := tools.FromDefinition(decode(t, tc.doc))
			require.NoError(t, err)
			raw, err := json.Marshal(tool.Tool)
			require.NoError(t, err)
			var got struct {
				Annotations map[string]any `json:"annotations"`
			}
			require.NoError(t, json.Unmarshal(raw, &got))
			require.Equal(t, map[string]any{
				"readOnlyHint": tc.readOnly, "destructiveHint": tc.destructive,
				"idempotentHint": tc.idempotent, "openWorldHint": tc.remote,
			}, got.Annotations)
		})
	}
}

func TestToolShape(t *testing.T) {
	t.Parallel()
	def := decode(t, `{"name":"greet","title":"Greet","description":"Says hello.","input":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},"steps":[{"id":"s","set":1}]}`)
	tool, err := tools.FromDefinition(def)
	require.NoError(t, err)
	raw, err := json.Marshal(tool.Tool)
	require.NoError(t, err)
	var got struct {
		Name         string         `json:"name"`
		Title        string         `json:"title"`
		Description  string         `json:"description"`
		InputSchema  map[string]any `json:"inputSchema"`
		OutputSchema map[string]any `json:"outputSchema"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, "greet", got.Name)
	require.Equal(t, "Greet", got.Title)
	require.Equal(t, "Says hello.", got.Description)
	props := got.InputSchema["properties"].(map[string]any)
	require.Equal(t, map[string]any{"type": "string"}, props["name"])
	key := props[tools.KeyArgument].(map[string]any)
	require.Equal(t, []any{float64(1), float64(255)}, []any{key["minLength"], key["maxLength"]})
	require.Equal(t, []any{"name"}, got.InputSchema["required"])
	require.ElementsMatch(t, []string{"runId", "status", "output", "error", "replayed", "waitingOn"}, keys(got.OutputSchema["properties"].(map[string]any)))

	require.Empty(t, tool.Input.Validate(map[string]any{"name": "Ada", tools.KeyArgument: "k1"}))
	require.Len(t, tool.Input.Validate(map[string]any{tools.KeyArgument: ""}), 2)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestInputSchemaRefusesATakenKeyProperty(t *testing.T) {
	t.Parallel()
	_, err := tools.InputSchema(json.RawMessage(`{"type":"object","properties":{"idempotencyKey":{"type":"string"}}}`))
	require.ErrorContains(t, err, "idempotencyKey")
}

func TestParseCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		raw     string
		key     string
		hasKey  bool
		input   string
		problem string
	}{
		{"absent arguments", ``, "", false, `{}`, ""},
		{"key split off", `{"b":1,"idempotencyKey":"k","a":12345678901234567890}`, "k", true, `{"a":12345678901234567890,"b":1}`, ""},
		{"not an object", `[1]`, "", false, "", ""},
		{"key not a string", `{"idempotencyKey":3}`, "", false, "", "/idempotencyKey"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, problems := tools.ParseCall(json.RawMessage(tc.raw))
			if tc.input == "" {
				require.Len(t, problems, 1)
				require.Equal(t, tc.problem, problems[0].Path)
				return
			}
			require.Empty(t, problems)
			require.Equal(t, tc.key, c.Key)
			require.Equal(t, tc.hasKey, c.HasKey)
			require.JSONEq(t, tc.input, string(c.Input))
			require.Equal(t, tc.input, string(c.Input))
		})
	}
}
