package mcpserver

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// Processes sharing the secret key open each other's requestStates; a process with another
// key, or its own random one, does not; a short key is refused.
func TestStateSignerKeys(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, MinStateKeyBytes)
	a, err := newStateSigner(secret)
	require.NoError(t, err)
	b, err := newStateSigner(bytes.Clone(secret))
	require.NoError(t, err)
	other, err := newStateSigner(bytes.Repeat([]byte{8}, MinStateKeyBytes))
	require.NoError(t, err)
	random, err := newStateSigner(nil)
	require.NoError(t, err)

	want := askState{RunID: "run_1", Step: 2, Attempt: 1, Replayed: true}
	sealed, err := a.seal(want)
	require.NoError(t, err)
	got, err := b.open(sealed)
	require.NoError(t, err)
	require.Equal(t, want, got, "another process of the same data directory")
	for name, g := range map[string]stateSigner{"another key": other, "a random key": random} {
		_, err := g.open(sealed)
		require.ErrorIs(t, err, errForgedState, name)
	}
	_, err = newStateSigner(secret[:MinStateKeyBytes-1])
	require.Error(t, err)
}
