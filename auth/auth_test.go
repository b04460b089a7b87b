package auth_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// flaky is a real store that fails every lookup while down is set.
type flaky struct {
	auth.Store
	down atomic.Bool
}

var errDown = errors.New("store unreachable")

func (f *flaky) TokenByHash(ctx context.Context, hash []byte) (*auth.Token, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Store.TokenByHash(ctx, hash)
}

func newService(t *testing.T) (*auth.Service, *flaky, *time.Time) {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	f := &flaky{Store: st}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := auth.New(f, &auth.Config{Now: func() time.Time { return now }})
	require.NoError(t, err)
	return s, f, &now
}

func TestNew(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		store   auth.Store
		cfg     *auth.Config
		wantErr string
		// created checks the CreatedAt of a token issued by the service, against the wall
		// clock read just before and after issuing.
		created func(t *testing.T, at, before, after time.Time)
	}{
		{name: "nil config: the wall clock", store: st, created: func(t *testing.T, at, before, after time.Time) {
			require.WithinRange(t, at, before, after)
		}},
		{name: "Now: its clock", store: st, cfg: &auth.Config{Now: func() time.Time { return fixed }},
			created: func(t *testing.T, at, _, _ time.Time) { require.True(t, at.Equal(fixed), at) }},
		{name: "no store", wantErr: "store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := auth.New(tc.store, tc.cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			before := time.Now()
			tok, _, err := s.Issue(context.Background(), auth.IssueParams{Name: tc.name, Scopes: auth.AdminScopes()})
			require.NoError(t, err)
			tc.created(t, tok.CreatedAt, before, time.Now())
		})
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newService(t)
	tok, secret, err := s.Issue(ctx, auth.IssueParams{Name: "ci", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	p, err := s.Authenticate(ctx, secret)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{ID: tok.ID, Name: "ci", Scopes: auth.AdminScopes()}, p)
	for _, bad := range []string{"", "gr_", secret + "x", "Bearer " + secret, "xx_" + secret[3:]} {
		_, err := s.Authenticate(ctx, bad)
		require.ErrorIs(t, err, auth.ErrUnauthorized, bad)
	}
	require.NoError(t, s.Revoke(ctx, tok.ID))
	_, err = s.Authenticate(ctx, secret)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "revoked: refused on the next request")
	_, _, err = s.Issue(ctx, auth.IssueParams{Name: " ", Scopes: auth.AdminScopes()})
	require.ErrorIs(t, err, auth.ErrInvalidName)
}

func TestAuthenticateWhileTheStoreIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, f, now := newService(t)
	seen, seenSecret, err := s.Issue(ctx, auth.IssueParams{Name: "seen", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	_, unseenSecret, err := s.Issue(ctx, auth.IssueParams{Name: "unseen", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	revoked, revokedSecret, err := s.Issue(ctx, auth.IssueParams{Name: "revoked", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	for _, secret := range []string{seenSecret, revokedSecret} {
		_, err := s.Authenticate(ctx, secret)
		require.NoError(t, err)
	}
	require.NoError(t, s.Revoke(ctx, revoked.ID))

	f.down.Store(true)
	p, err := s.Authenticate(ctx, seenSecret)
	require.NoError(t, err, "a token seen recently still resolves while the store is down")
	require.Equal(t, seen.ID, p.ID)
	_, err = s.Authenticate(ctx, unseenSecret)
	require.ErrorIs(t, err, errDown, "a token never seen is not taken on trust")
	_, err = s.Authenticate(ctx, revokedSecret)
	require.ErrorIs(t, err, errDown, "a revoked token is forgotten")
	*now = now.Add(auth.KnownFor + time.Second)
	_, err = s.Authenticate(ctx, seenSecret)
	require.ErrorIs(t, err, errDown, "the memory is bounded in time")

	f.down.Store(false)
	_, err = s.Authenticate(ctx, seenSecret)
	require.NoError(t, err, "the store answers again")
}

// TestLookup: a token found by ID is live: revoked → ErrNotFound, expired → ErrUnauthorized.
func TestLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, now := newService(t)
	tok, _, err := s.Issue(ctx, auth.IssueParams{Name: "console", Scopes: auth.AdminScopes(), ExpiresIn: time.Hour})
	require.NoError(t, err)
	got, err := s.Lookup(ctx, tok.ID)
	require.NoError(t, err)
	require.Equal(t, tok.ID, got.ID)

	*now = now.Add(time.Hour)
	_, err = s.Lookup(ctx, tok.ID)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "expired")
	require.NoError(t, s.Revoke(ctx, tok.ID))
	_, err = s.Lookup(ctx, tok.ID)
	require.ErrorIs(t, err, auth.ErrNotFound, "revoked")
}

// lookupDown is a store whose lookups by ID fail.
type lookupDown struct{ auth.Store }

func (lookupDown) TokenByID(context.Context, string) (*auth.Token, error) { return nil, errDown }

func TestWithinToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, f, now := newService(t)
	start := *now
	issue := func(life time.Duration) string {
		tok, _, err := s.Issue(ctx, auth.IssueParams{Name: "t", Scopes: auth.AdminScopes(), ExpiresIn: life})
		require.NoError(t, err)
		return tok.ID
	}
	forever, daily, expired, revoked := issue(0), issue(24*time.Hour), issue(time.Hour), issue(0)
	require.NoError(t, s.Revoke(ctx, revoked))
	*now = start.Add(time.Hour) // expired ends now; daily has 23h left
	down, err := auth.New(lookupDown{f}, &auth.Config{Now: func() time.Time { return *now }})
	require.NoError(t, err)

	for _, tc := range []struct {
		name     string
		tokens   auth.TokenLookup
		id       string
		lifetime time.Duration
		at       time.Time // default *now
		want     time.Duration
		wantErr  error
	}{
		{name: "local principal, no lifetime", id: auth.Local().ID, want: 0},
		{name: "local principal keeps its lifetime", id: auth.Local().ID, lifetime: time.Hour, want: time.Hour},
		{name: "no expiry, no lifetime", id: forever, want: 0},
		{name: "no expiry keeps the lifetime", id: forever, lifetime: time.Hour, want: time.Hour},
		{name: "expiring, no lifetime: what is left", id: daily, want: 23 * time.Hour},
		{name: "expiring cuts a longer lifetime", id: daily, lifetime: 720 * time.Hour, want: 23 * time.Hour},
		{name: "expiring keeps a shorter lifetime", id: daily, lifetime: time.Hour, want: time.Hour},
		{name: "expiring, left at a later now", id: daily, at: start.Add(2 * time.Hour), want: 22 * time.Hour},
		{name: "ends by now on the caller's clock", id: daily, lifetime: time.Hour, at: start.Add(24 * time.Hour), wantErr: auth.ErrUnauthorized},
		{name: "expired", id: expired, lifetime: time.Hour, wantErr: auth.ErrUnauthorized},
		{name: "revoked", id: revoked, wantErr: auth.ErrUnauthorized},
		{name: "missing", id: "no-such-token", wantErr: auth.ErrUnauthorized},
		{name: "store down", tokens: down, id: daily, wantErr: errDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens, at := tc.tokens, tc.at
			if tokens == nil {
				tokens = s
			}
			if at.IsZero() {
				at = *now
			}
			got, err := auth.WithinToken(ctx, tokens, tc.id, tc.lifetime, at)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				if tc.wantErr != auth.ErrUnauthorized {
					require.NotErrorIs(t, err, auth.ErrUnauthorized)
				}
				require.Zero(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
