package authtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/events"
)

// testServiceRevokes: over the backend, a token held in memory by two Services (two
// processes on one bus) is refused by both once either revokes it, the clocks unmoved; a
// held token is refused from its expiry on; scopes and audience come back as stored.
func testServiceRevokes(t *testing.T, s auth.Store) {
	ctx := context.Background()
	now := base
	clock := func() time.Time { return now }
	bus := events.New(nil, nil)
	a, err := auth.New(s, &auth.Config{Now: clock, Events: bus})
	require.NoError(t, err)
	b, err := auth.New(s, &auth.Config{Now: clock, Events: bus})
	require.NoError(t, err)
	scopes, err := auth.ParseScopeList("runs:write:tag=billing")
	require.NoError(t, err)
	authenticate := func(svc *auth.Service, secret string) error {
		_, err := svc.Authenticate(ctx, secret)
		return err
	}

	for _, revoker := range []*auth.Service{a, b} {
		tok, secret, err := a.Issue(ctx, auth.IssueParams{Name: "agent", Scopes: scopes, Audience: auth.AudienceMCP,
			ExpiresIn: time.Hour})
		require.NoError(t, err)
		for _, svc := range []*auth.Service{a, b} {
			p, err := svc.Authenticate(ctx, secret)
			require.NoError(t, err)
			require.Equal(t, auth.Principal{ID: tok.ID, Name: "agent", Scopes: scopes, Audience: auth.AudienceMCP}, p)
		}
		require.NoError(t, revoker.Revoke(ctx, tok.ID))
		require.ErrorIs(t, authenticate(a, secret), auth.ErrUnauthorized)
		require.ErrorIs(t, authenticate(b, secret), auth.ErrUnauthorized)
	}

	_, secret, err := a.Issue(ctx, auth.IssueParams{Name: "short", Scopes: scopes, ExpiresIn: auth.TokenCacheFor / 2})
	require.NoError(t, err)
	require.NoError(t, authenticate(a, secret))
	now = now.Add(auth.TokenCacheFor / 2)
	require.ErrorIs(t, authenticate(a, secret), auth.ErrUnauthorized, "expired while held")
}
