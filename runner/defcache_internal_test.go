package runner

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeJSONReusesDecoders decodes values in turn, as pooled decoders see them, and
// checks each against a decoder of its own: values that end at EOF (a number), trailing
// data (ignored, as json.Decoder does), errors, and what follows each.
func TestDecodeJSONReusesDecoders(t *testing.T) {
	inputs := []string{`{"n": 1}`, `2`, `{"a": [1, 2.5, "x"]}`, `12345678901234567890`, `"s"`, `{} trailing`,
		`{"b": true}`, `{"a": `, `null`, `[1, {"c": null}]`, "  {\"d\": 1}\n", `nope`, `7`, `{"e": "é"}`,
		"[" + strings.Repeat("1,", maxPooledDecode) + "1]", `{"after": "a large value"}`}
	for range 3 {
		for _, in := range inputs {
			got, gotErr := decodeJSON([]byte(in))
			want, wantErr := decodeOwn([]byte(in))
			require.Equal(t, wantErr != nil, gotErr != nil, in)
			require.Equal(t, want, got, in)
		}
	}
	v, err := decodeJSON(nil)
	require.NoError(t, err)
	require.Nil(t, v)
}

func decodeOwn(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
