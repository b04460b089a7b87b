// Package oauthtest is the conformance suite of oauth.Store: every backend runs it from
// its own tests with Run.
package oauthtest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/oauth"
)

var base = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC)

// Run runs the suite. newStore must return a fresh, empty, isolated store on each call.
func Run(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s oauth.Store)
	}{
		{"Clients", testClients},
		{"ClientsByAge", testClientsByAge},
		{"CodeExchangedOnce", testCodeExchangedOnce},
		{"CodeExchangeRace", testCodeExchangeRace},
		{"GrantOfReplayedCode", testGrantOfReplayedCode},
		{"GrantReplayRace", testGrantReplayRace},
		{"GrantByToken", testGrantByToken},
		{"GrantsByPrincipal", testGrantsByPrincipal},
		{"RefreshRotation", testRefreshRotation},
		{"RefreshRotationRace", testRefreshRotationRace},
		{"DeleteGrant", testDeleteGrant},
		{"SignInCodeTakenOnce", testSignInCodeTakenOnce},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func testClients(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	want := &oauth.Client{ID: "c1", Name: "Assistant", RedirectURIs: []string{"https://a.example/cb", "http://127.0.0.1:9/cb"},
		GrantTypes: []string{"authorization_code"}, CreatedAt: base}
	require.NoError(t, s.CreateClient(ctx, want))
	got, err := s.ClientByID(ctx, "c1")
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, err = s.ClientByID(ctx, "c2")
	require.ErrorIs(t, err, oauth.ErrNotFound)
}

// testClientsByAge: clients are counted, listed oldest first by registration, and deleted.
func testClientsByAge(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	for i, id := range []string{"c3", "c1", "c2"} {
		require.NoError(t, s.CreateClient(ctx, &oauth.Client{ID: id, Name: id, RedirectURIs: []string{"https://a.example/cb"},
			GrantTypes: []string{"authorization_code"}, CreatedAt: base.Add(time.Duration(2-i) * time.Hour)}))
	}
	n, err := s.CountClients(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	old, err := s.ClientsCreatedBefore(ctx, base.Add(2*time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"c2", "c1"}, old, "oldest first, before the time only")
	old, err = s.ClientsCreatedBefore(ctx, base.Add(3*time.Hour), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"c2"}, old, "at most limit")

	require.NoError(t, s.DeleteClient(ctx, "c2"))
	require.ErrorIs(t, s.DeleteClient(ctx, "c2"), oauth.ErrNotFound)
	_, err = s.ClientByID(ctx, "c2")
	require.ErrorIs(t, err, oauth.ErrNotFound)
	n, err = s.CountClients(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	old, err = s.ClientsCreatedBefore(ctx, base.Add(3*time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"c1", "c3"}, old)
}

func newCode(secret string, expires time.Time) *oauth.Code {
	return &oauth.Code{Hash: hashOf(secret), ClientID: "https://a.example/client.json", ClientName: "A",
		RedirectURI: "https://a.example/cb", Challenge: "challenge", Scope: "runs:write runs:read",
		PrincipalID: "p1", PrincipalName: "alice", ExpiresAt: expires}
}

func testCodeExchangedOnce(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	want := newCode("code1", base.Add(time.Minute))
	require.NoError(t, s.CreateCode(ctx, want))
	got, err := s.ExchangeCode(ctx, hashOf("code1"), "g1")
	require.NoError(t, err)
	want.GrantID = "g1"
	require.Equal(t, want, got)

	again, err := s.ExchangeCode(ctx, hashOf("code1"), "g2")
	require.ErrorIs(t, err, oauth.ErrCodeUsed)
	require.Equal(t, "g1", again.GrantID, "a reuse names the grant of the first exchange")
	_, err = s.ExchangeCode(ctx, hashOf("code1"), "g3")
	require.ErrorIs(t, err, oauth.ErrNotFound, "a reuse deletes the code")

	_, err = s.ExchangeCode(ctx, hashOf("nope"), "g3")
	require.ErrorIs(t, err, oauth.ErrNotFound)
}

func testCodeExchangeRace(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	require.NoError(t, s.CreateCode(ctx, newCode("race", base.Add(time.Minute))))
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.ExchangeCode(ctx, hashOf("race"), "g"+string(rune('a'+i)))
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else if !errors.Is(err, oauth.ErrNotFound) { // a reuse deleted it
			require.ErrorIs(t, err, oauth.ErrCodeUsed)
		}
	}
	require.Equal(t, 1, won, "exactly one exchange of a code succeeds")
}

// testGrantOfReplayedCode: a grant is stored only while its code is still used by it; a
// replay in between (which deletes the code) makes CreateGrant refuse and store nothing.
func testGrantOfReplayedCode(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	for _, c := range []string{"fresh", "replayed", "unused"} {
		require.NoError(t, s.CreateCode(ctx, newCode(c, base.Add(time.Minute))))
	}
	for _, c := range []string{"fresh", "replayed"} {
		_, err := s.ExchangeCode(ctx, hashOf(c), "g-"+c)
		require.NoError(t, err)
	}
	_, err := s.ExchangeCode(ctx, hashOf("replayed"), "g-again")
	require.ErrorIs(t, err, oauth.ErrCodeUsed)

	tests := []struct {
		name, grant, code string
		err               error
	}{
		{"used by this grant", "g-fresh", "fresh", nil},
		{"replayed", "g-replayed", "replayed", oauth.ErrCodeUsed},
		{"never exchanged", "g-unused", "unused", oauth.ErrCodeUsed},
		{"used by another grant", "g-other", "fresh", oauth.ErrCodeUsed},
		{"unknown code", "g-unknown", "nope", oauth.ErrCodeUsed},
	}
	for _, tc := range tests {
		g := newGrant(tc.grant, "p1", base)
		g.Code = hashOf(tc.code)
		err := s.CreateGrant(ctx, g)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, tc.name)
			_, err = s.GrantByID(ctx, tc.grant)
			require.ErrorIs(t, err, oauth.ErrNotFound, "%s: nothing stored", tc.name)
			_, err = s.GrantByRefresh(ctx, hashOf("refresh-"+tc.grant))
			require.ErrorIs(t, err, oauth.ErrNotFound, "%s: no refresh token stored", tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		got, err := s.GrantByID(ctx, tc.grant)
		require.NoError(t, err)
		require.Nil(t, got.Code, "the code is not stored")
	}
}

// testGrantReplayRace races a replay of a code against storing the grant of its first
// exchange: either the grant is refused, or it is stored before the replay, which then
// finds it to revoke. Never a grant the replay cannot see.
func testGrantReplayRace(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	for i := range 20 {
		secret, id := fmt.Sprintf("race-%d", i), fmt.Sprintf("g%d", i)
		require.NoError(t, s.CreateCode(ctx, newCode(secret, base.Add(time.Minute))))
		_, err := s.ExchangeCode(ctx, hashOf(secret), id)
		require.NoError(t, err)
		g := newGrant(id, "p1", base)
		g.Code = hashOf(secret)
		var created, replayed, seen error
		var wg sync.WaitGroup
		wg.Go(func() { created = s.CreateGrant(ctx, g) })
		wg.Go(func() {
			var c *oauth.Code
			if c, replayed = s.ExchangeCode(ctx, hashOf(secret), "replay"); errors.Is(replayed, oauth.ErrCodeUsed) {
				_, seen = s.GrantByID(ctx, c.GrantID)
			}
		})
		wg.Wait()
		require.ErrorIs(t, replayed, oauth.ErrCodeUsed)
		if created != nil {
			require.ErrorIs(t, created, oauth.ErrCodeUsed)
			continue
		}
		require.NoError(t, seen, "a stored grant is visible to the replay that follows it")
	}
}

// testGrantByToken: a grant is found by the access token it holds now, not by one a
// rotation replaced, nor once deleted.
func testGrantByToken(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	require.NoError(t, s.CreateGrant(ctx, newGrant("g1", "p1", base)))
	require.NoError(t, s.CreateGrant(ctx, newGrant("g2", "p1", base)))
	g, err := s.GrantByToken(ctx, "tok-g1")
	require.NoError(t, err)
	require.Equal(t, "g1", g.ID)

	_, err = s.RotateRefresh(ctx, oauth.RotateParams{Old: hashOf("refresh-g1"), New: hashOf("r2"), ExpiresAt: base, TokenID: "tok2"})
	require.NoError(t, err)
	g, err = s.GrantByToken(ctx, "tok2")
	require.NoError(t, err)
	require.Equal(t, "g1", g.ID)
	_, err = s.GrantByToken(ctx, "tok-g1")
	require.ErrorIs(t, err, oauth.ErrNotFound, "a replaced token no longer names the grant")

	_, err = s.DeleteGrant(ctx, "g1")
	require.NoError(t, err)
	_, err = s.GrantByToken(ctx, "tok2")
	require.ErrorIs(t, err, oauth.ErrNotFound)
	g, err = s.GrantByToken(ctx, "tok-g2")
	require.NoError(t, err)
	require.Equal(t, "g2", g.ID)
}

func newGrant(id, principal string, at time.Time) *oauth.Grant {
	return &oauth.Grant{ID: id, ClientID: "client-" + id, ClientName: "Client " + id, PrincipalID: principal,
		PrincipalName: "name-" + principal, Scope: "runs:read", CreatedAt: at, RefreshHash: hashOf("refresh-" + id),
		RefreshExpiresAt: at.Add(24 * time.Hour), TokenIDs: []string{"tok-" + id}, Issued: 1}
}

func testGrantsByPrincipal(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	g1, g2, g3 := newGrant("g1", "p1", base.Add(2*time.Second)), newGrant("g2", "p2", base), newGrant("g3", "p1", base.Add(time.Second))
	for _, g := range []*oauth.Grant{g1, g2, g3} {
		require.NoError(t, s.CreateGrant(ctx, g))
	}
	got, err := s.GrantByID(ctx, "g1")
	require.NoError(t, err)
	require.Equal(t, g1, got)
	_, err = s.GrantByID(ctx, "nope")
	require.ErrorIs(t, err, oauth.ErrNotFound)

	ids := func(gs []*oauth.Grant) []string {
		out := []string{}
		for _, g := range gs {
			out = append(out, g.ID)
		}
		return out
	}
	all, err := s.ListGrants(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []string{"g2", "g3", "g1"}, ids(all))
	mine, err := s.ListGrants(ctx, "p1")
	require.NoError(t, err)
	require.Equal(t, []string{"g3", "g1"}, ids(mine))
	none, err := s.ListGrants(ctx, "p9")
	require.NoError(t, err)
	require.Empty(t, none)
}

func testRefreshRotation(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	require.NoError(t, s.CreateGrant(ctx, newGrant("g1", "p1", base)))
	later := base.Add(48 * time.Hour)
	g, err := s.RotateRefresh(ctx, oauth.RotateParams{Old: hashOf("refresh-g1"), New: hashOf("r2"), ExpiresAt: later, TokenID: "tok2"})
	require.NoError(t, err)
	require.Equal(t, hashOf("r2"), g.RefreshHash)
	require.Equal(t, later, g.RefreshExpiresAt)
	require.Equal(t, []string{"tok2"}, g.TokenIDs, "the new access token replaces the old ones")
	require.Equal(t, 2, g.Issued, "a refresh counts as a token issued")
	stored, err := s.GrantByID(ctx, "g1")
	require.NoError(t, err)
	require.Equal(t, g, stored)

	for _, h := range []string{"refresh-g1", "r2"} {
		byRefresh, err := s.GrantByRefresh(ctx, hashOf(h))
		require.NoError(t, err, "a rotated-away refresh token still names its grant")
		require.Equal(t, "g1", byRefresh.ID)
	}

	reused, err := s.RotateRefresh(ctx, oauth.RotateParams{Old: hashOf("refresh-g1"), New: hashOf("r3"), ExpiresAt: later, TokenID: "tok3"})
	require.ErrorIs(t, err, oauth.ErrRefreshReused)
	require.Equal(t, "g1", reused.ID)
	unchanged, err := s.GrantByID(ctx, "g1")
	require.NoError(t, err)
	require.Equal(t, g, unchanged, "a reuse changes nothing")

	_, err = s.RotateRefresh(ctx, oauth.RotateParams{Old: hashOf("unknown"), New: hashOf("r4"), ExpiresAt: later, TokenID: "tok4"})
	require.ErrorIs(t, err, oauth.ErrNotFound)
	_, err = s.GrantByRefresh(ctx, hashOf("unknown"))
	require.ErrorIs(t, err, oauth.ErrNotFound)
}

// testRefreshRotationRace: of concurrent rotations of one refresh token exactly one
// succeeds; the others see a reuse (which revokes the grant), never a second new token.
func testRefreshRotationRace(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	require.NoError(t, s.CreateGrant(ctx, newGrant("g1", "p1", base)))
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			next := "next-" + string(rune('a'+i))
			_, errs[i] = s.RotateRefresh(ctx, oauth.RotateParams{Old: hashOf("refresh-g1"), New: hashOf(next),
				ExpiresAt: base.Add(48 * time.Hour), TokenID: "tok-" + next})
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, won, "exactly one rotation of a refresh token succeeds")
			won = i
		} else {
			require.ErrorIs(t, err, oauth.ErrRefreshReused)
		}
	}
	require.NotEqual(t, -1, won, "one rotation succeeds")
	g, err := s.GrantByID(ctx, "g1")
	require.NoError(t, err)
	require.Equal(t, hashOf("next-"+string(rune('a'+won))), g.RefreshHash, "the winner's refresh token is current")
	require.Equal(t, []string{"tok-next-" + string(rune('a'+won))}, g.TokenIDs)
}

func testDeleteGrant(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	require.NoError(t, s.CreateGrant(ctx, newGrant("g1", "p1", base)))
	require.NoError(t, s.CreateGrant(ctx, newGrant("g2", "p1", base)))
	_, err := s.RotateRefresh(ctx, oauth.RotateParams{Old: hashOf("refresh-g1"), New: hashOf("r2"), ExpiresAt: base, TokenID: "tok2"})
	require.NoError(t, err)

	g, err := s.DeleteGrant(ctx, "g1")
	require.NoError(t, err)
	require.Equal(t, []string{"tok2"}, g.TokenIDs, "the deleted grant names its tokens to revoke")
	_, err = s.GrantByID(ctx, "g1")
	require.ErrorIs(t, err, oauth.ErrNotFound)
	for _, h := range []string{"refresh-g1", "r2"} {
		_, err = s.GrantByRefresh(ctx, hashOf(h))
		require.ErrorIs(t, err, oauth.ErrNotFound)
	}
	_, err = s.DeleteGrant(ctx, "g1")
	require.ErrorIs(t, err, oauth.ErrNotFound)
	left, err := s.ListGrants(ctx, "")
	require.NoError(t, err)
	require.Len(t, left, 1)
}

func testSignInCodeTakenOnce(t *testing.T, s oauth.Store) {
	ctx := context.Background()
	want := &oauth.SignInCode{Hash: hashOf("ABCD"), PrincipalID: "local", PrincipalName: "local", Scope: "admin", ExpiresAt: base}
	require.NoError(t, s.CreateSignInCode(ctx, want))
	got, err := s.TakeSignInCode(ctx, hashOf("ABCD"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, err = s.TakeSignInCode(ctx, hashOf("ABCD"))
	require.ErrorIs(t, err, oauth.ErrNotFound, "a sign-in code signs in once")
}
