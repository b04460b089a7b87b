// Package authtest is the conformance suite of auth.Store: every backend runs it from its
// own tests with Run. It also checks auth.Service over the backend where the service's
// memory of tokens depends on it (revokes, expiry).
package authtest

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

var base = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", -5*3600))

// Run runs the suite. newStore must return a fresh, empty, isolated store on each call.
func Run(t *testing.T, newStore func(t *testing.T) auth.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s auth.Store)
	}{
		{"CreateAndFind", testCreateAndFind},
		{"ListOldestFirst", testListOldestFirst},
		{"DeleteAndCount", testDeleteAndCount},
		{"ScopesExpiryAudience", testScopesExpiryAudience},
		{"ServiceRevokes", testServiceRevokes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func newToken(id string, at time.Time) *auth.Token {
	h := sha256.Sum256([]byte("gr_secret_" + id))
	return &auth.Token{ID: id, Name: "name-" + id, Hash: h[:], Scopes: auth.AdminScopes(), CreatedAt: at}
}

func hashOf(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func testCreateAndFind(t *testing.T, s auth.Store) {
	ctx := context.Background()
	want := newToken("t1", base)
	require.NoError(t, s.CreateToken(ctx, want))
	require.NoError(t, s.CreateToken(ctx, newToken("t2", base)))

	got, err := s.TokenByHash(ctx, hashOf("gr_secret_t1"))
	require.NoError(t, err)
	require.Truef(t, want.CreatedAt.Equal(got.CreatedAt), "created at %v, want %v", got.CreatedAt, want.CreatedAt)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	got.CreatedAt = want.CreatedAt
	require.Equal(t, want, got)

	_, err = s.TokenByHash(ctx, hashOf("gr_unknown"))
	require.ErrorIs(t, err, auth.ErrNotFound)

	byID, err := s.TokenByID(ctx, "t1")
	require.NoError(t, err)
	byID.CreatedAt = want.CreatedAt
	require.Equal(t, want, byID)
	_, err = s.TokenByID(ctx, "unknown")
	require.ErrorIs(t, err, auth.ErrNotFound)
}

func testListOldestFirst(t *testing.T, s auth.Store) {
	ctx := context.Background()
	for i, id := range []string{"c", "a", "b"} {
		require.NoError(t, s.CreateToken(ctx, newToken(id, base.Add(time.Duration(3-i)*time.Second))))
	}
	ts, err := s.ListTokens(ctx)
	require.NoError(t, err)
	ids := make([]string, len(ts))
	for i, tok := range ts {
		ids[i] = tok.ID
	}
	require.Equal(t, []string{"b", "a", "c"}, ids)
}

func testDeleteAndCount(t *testing.T, s auth.Store) {
	ctx := context.Background()
	n, err := s.CountTokens(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	for _, id := range []string{"t1", "t2"} {
		require.NoError(t, s.CreateToken(ctx, newToken(id, base)))
	}
	n, err = s.CountTokens(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	require.NoError(t, s.DeleteToken(ctx, "t1"))
	require.ErrorIs(t, s.DeleteToken(ctx, "t1"), auth.ErrNotFound)
	require.ErrorIs(t, s.DeleteToken(ctx, "nope"), auth.ErrNotFound)
	_, err = s.TokenByHash(ctx, hashOf("gr_secret_t1"))
	require.ErrorIs(t, err, auth.ErrNotFound, "a revoked token no longer resolves")
	_, err = s.TokenByID(ctx, "t1")
	require.ErrorIs(t, err, auth.ErrNotFound, "nor by its ID")
	n, err = s.CountTokens(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ts, err := s.ListTokens(ctx)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	require.Equal(t, "t2", ts[0].ID)
}

func testScopesExpiryAudience(t *testing.T, s auth.Store) {
	ctx := context.Background()
	scopes, err := auth.ParseScopes([]string{"runs:write:tag=billing", "runs:read:workflow=greet", "workflows:write"})
	require.NoError(t, err)
	exp := base.Add(time.Hour)
	want := newToken("scoped", base)
	want.Scopes, want.ExpiresAt, want.Audience = scopes, &exp, auth.AudienceMCP
	require.NoError(t, s.CreateToken(ctx, want))
	require.NoError(t, s.CreateToken(ctx, newToken("plain", base)))

	got, err := s.TokenByHash(ctx, hashOf("gr_secret_scoped"))
	require.NoError(t, err)
	require.Equal(t, scopes, got.Scopes)
	require.Equal(t, auth.AudienceMCP, got.Audience)
	require.NotNil(t, got.ExpiresAt)
	require.Truef(t, exp.Equal(*got.ExpiresAt), "expires at %v, want %v", got.ExpiresAt, exp)

	ts, err := s.ListTokens(ctx)
	require.NoError(t, err)
	require.Len(t, ts, 2)
	for _, tok := range ts {
		if tok.ID == "plain" {
			require.Equal(t, auth.AdminScopes(), tok.Scopes)
			require.Nil(t, tok.ExpiresAt, "a token without expiry reads back without one")
			require.Empty(t, tok.Audience)
		} else {
			require.Equal(t, scopes, tok.Scopes)
		}
	}
}
