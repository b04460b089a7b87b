package schemas

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func concurrencyDoc(c string) []byte {
	return []byte(`{"name":"wf","input":{"type":"object"},"steps":[{"id":"a","set":1}],"concurrency":` + c + `}`)
}

// TestConcurrencyValid is a concurrency both the validator and the JSON Schema accept.
func TestConcurrencyValid(t *testing.T) {
	t.Parallel()
	s := compiledDefinitionSchema(t)
	for _, c := range []string{
		`{"key":"${{ input.customer }}","limit":1}`,
		`{"limit":1000}`,
		`{"key":"fixed","limit":3}`,
	} {
		d, err := Check(concurrencyDoc(c), ValidateOptions{})
		require.NoError(t, err, c)
		require.NotNil(t, d.Concurrency, c)
		require.NoError(t, s.Validate(asJSONValue(t, concurrencyDoc(c))), c)
	}
}

// TestConcurrencyInvalid is each malformed concurrency, refused by Check at its JSON pointer
// and by the JSON Schema.
func TestConcurrencyInvalid(t *testing.T) {
	t.Parallel()
	s := compiledDefinitionSchema(t)
	tests := []struct {
		name, doc, path string
	}{
		{"limit missing", `{"key":"${{ input.c }}"}`, "/concurrency/limit"},
		{"limit zero", `{"limit":0}`, "/concurrency/limit"},
		{"limit negative", `{"limit":-1}`, "/concurrency/limit"},
		{"limit one past the bound", `{"limit":1001}`, "/concurrency/limit"},
		{"limit not a number", `{"limit":"1"}`, "/concurrency/limit"},
		{"key a number", `{"key":7,"limit":1}`, "/concurrency/key"},
		{"key an object", `{"key":{"a":1},"limit":1}`, "/concurrency/key"},
		{"key reads steps", `{"key":"${{ steps.a.output }}","limit":1}`, "/concurrency/key"},
		{"key does not compile", `{"key":"${{ input. }}","limit":1}`, "/concurrency/key"},
		{"unknown field", `{"limit":1,"per":"customer"}`, "/concurrency/per"},
		{"not an object", `5`, "/concurrency"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(concurrencyDoc(tc.doc), ValidateOptions{})
			var ve *ValidationError
			var de *DecodeError
			switch {
			case errors.As(err, &ve):
				require.Equal(t, tc.path, ve.Problems[0].Path, ve.Problems)
			case errors.As(err, &de):
				require.Equal(t, tc.path, de.Path, de.Message)
			default:
				t.Fatalf("want a problem at %s, got %v", tc.path, err)
			}
			if tc.name != "key reads steps" && tc.name != "key does not compile" {
				require.Error(t, s.Validate(asJSONValue(t, concurrencyDoc(tc.doc))))
			}
		})
	}
}
