package auth_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/internal/testclock"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// counted is a real store that counts token reads by hash and, when pause is set, holds a
// read that found its token until pause is closed (after telling paused).
type counted struct {
	auth.Store
	reads  atomic.Int64
	mu     sync.Mutex
	pause  chan struct{}
	paused chan struct{}
}

func (c *counted) TokenByHash(ctx context.Context, hash []byte) (*auth.Token, error) {
	c.reads.Add(1)
	t, err := c.Store.TokenByHash(ctx, hash)
	c.mu.Lock()
	pause, paused := c.pause, c.paused
	c.mu.Unlock()
	if pause != nil && err == nil {
		paused <- struct{}{}
		<-pause
	}
	return t, err
}

// holdOnce makes the next read that finds its token wait until the returned func is called.
func (c *counted) holdOnce() (paused <-chan struct{}, release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pause, c.paused = make(chan struct{}), make(chan struct{}, 1)
	pause := c.pause
	return c.paused, func() {
		c.mu.Lock()
		c.pause = nil
		c.mu.Unlock()
		close(pause)
	}
}

// process is one process's token service over a shared store, its clock and its reads.
type process struct {
	svc   *auth.Service
	store *counted
	clock *testclock.Clock
}

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// processes opens n token services over one fresh SQLite store, each with its own clock
// and store handle; bus, when set, is the events bus every one of them uses.
func processes(t *testing.T, n int, bus func() *events.Bus) []*process {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	out := make([]*process, n)
	for i := range out {
		st, err := sqlitestore.Open(context.Background(), path)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		p := &process{store: &counted{Store: st}, clock: testclock.New(start)}
		cfg := &auth.Config{Now: p.clock.Now}
		if bus != nil {
			cfg.Events = bus()
		}
		p.svc, err = auth.New(p.store, cfg)
		require.NoError(t, err)
		out[i] = p
	}
	return out
}

func issue(t *testing.T, s *auth.Service, p auth.IssueParams) (*auth.Token, string) {
	t.Helper()
	if p.Name == "" {
		p.Name = "agent"
	}
	if p.Scopes == nil {
		p.Scopes = auth.AdminScopes()
	}
	tok, secret, err := s.Issue(context.Background(), p)
	require.NoError(t, err)
	return tok, secret
}

// TestTokensHeld: a token read from the store answers from memory for TokenCacheFor, with
// its scopes and audience exactly as stored; then it is read again. A caller changing the
// scopes it got changes nothing held.
func TestTokensHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := processes(t, 1, nil)[0]
	scopes, err := auth.ParseScopeList("runs:write:workflow=greet runs:read:tag=billing")
	require.NoError(t, err)
	tok, secret := issue(t, a.svc, auth.IssueParams{Scopes: scopes, Audience: auth.AudienceMCP})
	want := auth.Principal{ID: tok.ID, Name: "agent", Scopes: scopes, Audience: auth.AudienceMCP}

	first, err := a.svc.Authenticate(ctx, secret)
	require.NoError(t, err)
	require.Equal(t, want, first)
	first.Scopes[0] = auth.AdminScopes()[0]
	a.clock.Advance(auth.TokenCacheFor - time.Nanosecond)
	for range 3 {
		p, err := a.svc.Authenticate(ctx, secret)
		require.NoError(t, err)
		require.Equal(t, want, p)
	}
	require.EqualValues(t, 1, a.store.reads.Load(), "held: one read")
	a.clock.Advance(time.Nanosecond)
	_, err = a.svc.Authenticate(ctx, secret)
	require.NoError(t, err)
	require.EqualValues(t, 2, a.store.reads.Load(), "read again after TokenCacheFor")
}

// TestHeldTokenExpires: a held token is refused from its expiry on, however recently it
// was read.
func TestHeldTokenExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := processes(t, 1, nil)[0]
	_, secret := issue(t, a.svc, auth.IssueParams{ExpiresIn: auth.TokenCacheFor / 2})
	_, err := a.svc.Authenticate(ctx, secret)
	require.NoError(t, err)
	a.clock.Advance(auth.TokenCacheFor/2 - time.Nanosecond)
	_, err = a.svc.Authenticate(ctx, secret)
	require.NoError(t, err)
	a.clock.Advance(time.Nanosecond)
	_, err = a.svc.Authenticate(ctx, secret)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "expired while held")
}

// TestRevokedTokenRefusedAtOnce: the process that revokes a held token refuses it on the
// very next request, and a lookup that read the token before the revoke cannot put it
// back in memory after it.
func TestRevokedTokenRefusedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		a := processes(t, 1, nil)[0]
		tok, secret := issue(t, a.svc, auth.IssueParams{})
		_, err := a.svc.Authenticate(ctx, secret)
		require.NoError(t, err)
		require.NoError(t, a.svc.Revoke(ctx, tok.ID))
		_, err = a.svc.Authenticate(ctx, secret)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
	})
	t.Run("read before the revoke", func(t *testing.T) {
		t.Parallel()
		a := processes(t, 1, nil)[0]
		tok, secret := issue(t, a.svc, auth.IssueParams{})
		paused, release := a.store.holdOnce()
		inFlight := make(chan error, 1)
		go func() {
			_, err := a.svc.Authenticate(ctx, secret)
			inFlight <- err
		}()
		<-paused // the lookup has read the live token
		require.NoError(t, a.svc.Revoke(ctx, tok.ID))
		release()
		require.NoError(t, <-inFlight, "it read the token before the revoke")
		_, err := a.svc.Authenticate(ctx, secret)
		require.ErrorIs(t, err, auth.ErrUnauthorized, "not put back in memory")
	})
}

// TestRevokedElsewhere: a token revoked by another process sharing the store is refused
// as soon as this process hears of it (events.Tokens), and without any notice once
// TokenCacheFor has passed since it was read.
func TestRevokedElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("notice", func(t *testing.T) {
		t.Parallel()
		// One bus for both: B's notice reaches A's subscription before Revoke returns, as
		// a transport delivers it between processes some milliseconds later.
		bus := events.New(nil, nil)
		ps := processes(t, 2, func() *events.Bus { return bus })
		a, b := ps[0], ps[1]
		tok, secret := issue(t, a.svc, auth.IssueParams{})
		_, other := issue(t, a.svc, auth.IssueParams{Name: "other"})
		for _, s := range []string{secret, other} {
			_, err := a.svc.Authenticate(ctx, s)
			require.NoError(t, err)
		}
		require.NoError(t, b.svc.Revoke(ctx, tok.ID))
		_, err := a.svc.Authenticate(ctx, secret)
		require.ErrorIs(t, err, auth.ErrUnauthorized, "refused on the notice, the clock unmoved")
		reads := a.store.reads.Load()
		_, err = a.svc.Authenticate(ctx, other)
		require.NoError(t, err)
		require.Equal(t, reads+1, a.store.reads.Load(), "a notice forgets every token held")

		require.ErrorIs(t, b.svc.Revoke(ctx, tok.ID), auth.ErrNotFound)
		require.ErrorIs(t, b.svc.Revoke(ctx, "no-such-token"), auth.ErrNotFound)
		_, err = a.svc.Authenticate(ctx, other)
		require.NoError(t, err)
		require.Equal(t, reads+1, a.store.reads.Load(), "revoking a token that is not there tells no one")
	})
	t.Run("transport", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "db")
		ps := make([]*process, 2)
		for i := range ps {
			st, err := sqlitestore.Open(ctx, path)
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			bus := events.New(st.Events(), nil)
			require.NoError(t, bus.Start(ctx))
			t.Cleanup(func() { _ = bus.Stop(context.Background()) })
			ps[i] = &process{store: &counted{Store: st}, clock: testclock.New(start)}
			ps[i].svc, err = auth.New(ps[i].store, &auth.Config{Now: ps[i].clock.Now, Events: bus})
			require.NoError(t, err)
		}
		a, b := ps[0], ps[1]
		tok, secret := issue(t, a.svc, auth.IssueParams{})
		_, err := a.svc.Authenticate(ctx, secret)
		require.NoError(t, err)
		require.NoError(t, b.svc.Revoke(ctx, tok.ID))
		// A's clock stands still, so only B's notice through the SQLite change log can
		// make A refuse; it is polled every sqlitestore.EventsPollInterval.
		require.Eventually(t, func() bool {
			_, err := a.svc.Authenticate(ctx, secret)
			return err != nil
		}, 5*time.Second, 5*time.Millisecond)
		_, err = a.svc.Authenticate(ctx, secret)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
	})
	t.Run("no notice", func(t *testing.T) {
		t.Parallel()
		ps := processes(t, 2, nil)
		a, b := ps[0], ps[1]
		tok, secret := issue(t, a.svc, auth.IssueParams{})
		_, err := a.svc.Authenticate(ctx, secret)
		require.NoError(t, err)
		require.NoError(t, b.svc.Revoke(ctx, tok.ID))
		a.clock.Advance(auth.TokenCacheFor - time.Nanosecond)
		_, err = a.svc.Authenticate(ctx, secret)
		require.NoError(t, err, "the documented window: held for TokenCacheFor")
		a.clock.Advance(time.Nanosecond)
		_, err = a.svc.Authenticate(ctx, secret)
		require.ErrorIs(t, err, auth.ErrUnauthorized, "refused once TokenCacheFor has passed")
	})
}

// TestBadTokensFlood: a flood of distinct unknown tokens is refused, each asked of the
// store (a refusal is never held: nothing an attacker sends can fill the memory), and
// it does not push out a token held meanwhile (a refusal taking a place would, past
// MaxTokensHeld of them, empty the memory).
func TestBadTokensFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := processes(t, 1, nil)[0]
	_, secret := issue(t, a.svc, auth.IssueParams{})
	_, err := a.svc.Authenticate(ctx, secret)
	require.NoError(t, err)
	const flood = 300
	for i := range flood {
		bad := fmt.Sprintf("%sbad%d", auth.TokenPrefix, i)
		for range 2 {
			_, err := a.svc.Authenticate(ctx, bad)
			require.ErrorIs(t, err, auth.ErrUnauthorized)
		}
	}
	require.EqualValues(t, 1+2*flood, a.store.reads.Load(), "every unknown token is asked of the store, each time")
	_, err = a.svc.Authenticate(ctx, secret)
	require.NoError(t, err)
	require.EqualValues(t, 1+2*flood, a.store.reads.Load(), "the held token is still held")
}
