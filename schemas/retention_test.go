package schemas_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/schemas"
)

func TestParseRetention(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * 24 * time.Hour, true},
		{"0", 0, true},
		{"0d", 0, true},
		{"1s", time.Second, true},
		{"90m", 90 * time.Minute, true},
		{"999ms", 0, false}, // one past MinRetention
		{"-1d", 0, false},
		{"-1h", 0, false},
		{"1.5d", 0, false},
		{"d", 0, false},
		{"soon", 0, false},
		{"3651d", 0, false}, // past MaxDuration
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := schemas.ParseRetention(tc.in)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestDefinitionRetention is a definition's `retention`: read, written back as given, and
// refused with a pointer to it when it is not one.
func TestDefinitionRetention(t *testing.T) {
	doc := func(r string) []byte {
		return []byte(`{"name":"kept","input":{"type":"object"},"steps":[{"id":"a","set":1}],"retention":` + r + `}`)
	}
	def, err := schemas.Decode(doc(`"7d"`))
	require.NoError(t, err)
	require.Equal(t, 7*24*time.Hour, def.Retention.Std())
	out, err := json.Marshal(def)
	require.NoError(t, err)
	require.Contains(t, string(out), `"retention":"7d"`)
	def, err = schemas.Decode(doc(`"90m"`))
	require.NoError(t, err)
	require.Equal(t, 90*time.Minute, def.Retention.Std())

	for _, bad := range []string{`"0"`, `"500ms"`, `"soon"`, `7`, `"-1d"`} {
		_, err := schemas.Decode(doc(bad))
		require.Error(t, err, bad)
		var de *schemas.DecodeError
		require.ErrorAs(t, err, &de, bad)
		require.Equal(t, "/retention", de.Path, bad)
	}
}
