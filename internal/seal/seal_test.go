package seal_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/seal"
)

// TestBoxOpensOnlyWhatItSealed: a value opens with the box and associated data it was
// sealed with, and with nothing else: another purpose's key, other associated data, an
// altered or cut value, text that is not base64url.
func TestBoxOpensOnlyWhatItSealed(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte{3}, 32)
	cursors, err := seal.For(secret, "cursor")
	require.NoError(t, err)
	sessions, err := seal.For(secret, "session")
	require.NoError(t, err)
	raw, err := seal.New(secret)
	require.NoError(t, err)

	text, err := cursors.SealText([]byte("plain"), []byte("cursor"))
	require.NoError(t, err)
	plain, err := cursors.OpenText(text, []byte("cursor"))
	require.NoError(t, err)
	require.Equal(t, "plain", string(plain))
	again, err := cursors.SealText([]byte("plain"), []byte("cursor"))
	require.NoError(t, err)
	require.NotEqual(t, text, again, "a fresh nonce each time")

	altered := []byte(text)
	altered[len(altered)-1] ^= 1
	for name, tc := range map[string]struct {
		box  *seal.Box
		text string
		ad   string
	}{
		"another purpose's key": {sessions, text, "cursor"},
		"the secret key itself": {raw, text, "cursor"},
		"other associated data": {cursors, text, "session"},
		"altered":               {cursors, string(altered), "cursor"},
		"cut short":             {cursors, text[:10], "cursor"},
		"empty":                 {cursors, "", "cursor"},
		"not base64url":         {cursors, "a+b/c==", "cursor"},
	} {
		_, err := tc.box.OpenText(tc.text, []byte(tc.ad))
		require.ErrorIs(t, err, seal.ErrOpen, name)
	}
}

func TestNewRefusesKeysNotAES256(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 24, 33} {
		_, err := seal.New(make([]byte, n))
		require.Error(t, err, "%d bytes", n)
	}
	require.Len(t, seal.Derive([]byte("any length"), "purpose"), seal.KeySize)
}

// TestOrRandom: a secret given is kept as it is; without one, each call makes a fresh
// KeySize-byte key of its own.
func TestOrRandom(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte{5}, seal.KeySize)
	got, err := seal.OrRandom(secret)
	require.NoError(t, err)
	require.Equal(t, secret, got)

	a, err := seal.OrRandom(nil)
	require.NoError(t, err)
	b, err := seal.OrRandom(nil)
	require.NoError(t, err)
	require.Len(t, a, seal.KeySize)
	require.Len(t, b, seal.KeySize)
	require.NotEqual(t, a, b, "each Service without a secret key gets a key of its own")
	_, err = seal.For(a, "purpose")
	require.NoError(t, err)
}
