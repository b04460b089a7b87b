package redisstore

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDefinitionsBounded: the kept definitions never hold more than
// maxKeptDefinitionBytes besides the last one kept, however many versions are read, and a
// kept definition is a copy of the one given.
func TestDefinitionsBounded(t *testing.T) {
	t.Parallel()
	var d definitions
	def := json.RawMessage(bytes.Repeat([]byte("x"), 1<<20))
	for i := range 3 * maxKeptDefinitionBytes / len(def) {
		d.put(versionRef{"wf", i + 1}, def)
		require.LessOrEqual(t, d.bytes, maxKeptDefinitionBytes)
		total := 0
		for _, v := range d.by {
			total += len(v)
		}
		require.Equal(t, total, d.bytes)
	}
	huge := json.RawMessage(bytes.Repeat([]byte("y"), maxKeptDefinitionBytes+1))
	d.put(versionRef{"big", 1}, huge)
	require.Len(t, d.by, 1, "a definition past the bound alone starts the cache again")
	d.put(versionRef{"wf", 1}, def)
	require.Len(t, d.by, 1)
	require.Equal(t, len(def), d.bytes)

	src := json.RawMessage(`{"a":1}`)
	d.put(versionRef{"c", 1}, src)
	src[2] = 'b'
	got, ok := d.get(versionRef{"c", 1})
	require.True(t, ok)
	require.Equal(t, `{"a":1}`, string(got))
}
