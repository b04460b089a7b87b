package catalog

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/seal"
)

// sealedBefore is "s3cret-token" sealed for connection conn-1 under 32 bytes of 7 by the
// catalog's sealer before it moved onto internal/seal: secrets stored then must still open.
const sealedBefore = "050334c5fb14acc42e0b7193a41db961d1dfbe64f59134b198c6019ae531d3c42d2687db93080ef3"

func TestSealerOpensSecretsSealedBefore(t *testing.T) {
	t.Parallel()
	s, err := newSealer(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	old, err := hex.DecodeString(sealedBefore)
	require.NoError(t, err)
	plain, err := s.open(old, "conn-1")
	require.NoError(t, err)
	require.Equal(t, "s3cret-token", string(plain))

	_, err = s.open(old, "conn-2")
	require.ErrorIs(t, err, seal.ErrOpen, "a secret does not move to another connection")

	again, err := s.seal([]byte("s3cret-token"), "conn-1")
	require.NoError(t, err)
	require.Len(t, again, len(old), "same format: nonce, ciphertext, tag")
	plain, err = s.open(again, "conn-1")
	require.NoError(t, err)
	require.Equal(t, "s3cret-token", string(plain))
}
