package redisstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

// TestTokensFromBeforeScopesBecomeAdmin writes a token as the store wrote it before scopes
// existed (no scopes, expires_at or audience field) and reads it back as admin (SPEC §9).
func TestTokensFromBeforeScopesBecomeAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, rdb, prefix := freshRaw(t)
	require.NoError(t, rdb.HSet(ctx, prefix+"token:old", "id", "old", "name", "old", "hash", "\x01\x02",
		"created_at", "00000000000000000001", "sort_key", "x").Err())
	require.NoError(t, rdb.HSet(ctx, prefix+"token:hashes", "\x01\x02", "old").Err())

	tok, err := s.TokenByHash(ctx, []byte{1, 2})
	require.NoError(t, err)
	require.Equal(t, auth.AdminScopes(), tok.Scopes)
	require.Nil(t, tok.ExpiresAt)
}
