package schemas

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzDecodeValidate(f *testing.F) {
	for _, name := range []string{"process-order.yaml", "every-kind.json"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte(minimalJSON))
	f.Add([]byte(`{"name":"wf","input":{"type":"object"},"steps":[{"id":"a","custom":{"x":[1,2]}},{"id":"b","set":null}]}`))
	f.Add([]byte("name: wf\ninput: {type: object}\nsteps:\n  - id: a\n    sleep: {until: 2030-01-02T15:04:05Z}\n"))
	opts := ValidateOptions{CustomKinds: map[string]bool{"custom": true}}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(data)
		if err != nil {
			return
		}
		Validate(d, opts)
		out, err := Marshal(d)
		require.NoError(t, err)
		again, err := Decode(out)
		require.NoError(t, err, "%s", out)
		require.Equal(t, d, again)
		_, err = Hash(d)
		require.NoError(t, err)
	})
}
