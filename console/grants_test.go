package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/oauth"
)

// tokenNamed finds a stored token by name.
func (e *env) tokenNamed(name string) *auth.Token {
	e.t.Helper()
	list, err := e.auth.List(context.Background())
	require.NoError(e.t, err)
	for _, t := range list {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// TestTokenScopesAndExpiry: the tokens form mints the scopes and expiry asked for, shows
// them in the list, and refuses bad ones with the error on the page.
func TestTokenScopesAndExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	b := e.browser()
	b.signIn(e.token)
	csrf := b.csrf("/console/tokens")
	tests := []struct {
		name, scopes, expiresIn string
		status                  int
		want                    string // on the answer page
		stored                  string // the token's scopes, when created
	}{
		{"narrowed with expiry", "runs:read  runs:write:workflow=billing", "720h", http.StatusCreated, "runs:read runs:write:workflow=billing", "runs:read runs:write:workflow=billing"},
		{"no scopes: the signer's own", "", "", http.StatusCreated, "never", "admin"},
		{"unknown scope", "runs:delete", "", http.StatusBadRequest, "runs:delete", ""},
		{"expiry not a duration", "runs:read", "soon", http.StatusBadRequest, "positive Go duration", ""},
		{"negative expiry", "runs:read", "-1h", http.StatusBadRequest, "positive Go duration", ""},
	}
	for _, tc := range tests {
		p := b.post("/console/tokens", url.Values{"csrf": {csrf}, "name": {tc.name}, "scopes": {tc.scopes}, "expiresIn": {tc.expiresIn}})
		require.Equal(t, tc.status, p.Status, tc.name)
		require.Contains(t, p.Body, tc.want, tc.name)
		tok := e.tokenNamed(tc.name)
		if tc.stored == "" {
			require.Nil(t, tok, "%s: no token created", tc.name)
			require.Contains(t, p.Body, `role="alert"`, "%s: the problem is shown", tc.name)
			continue
		}
		require.NotNil(t, tok, tc.name)
		require.Equal(t, tc.stored, tok.Scopes.String(), tc.name)
		require.Equal(t, tc.expiresIn != "", tok.ExpiresAt != nil, tc.name)
	}
	narrowed := e.tokenNamed("narrowed with expiry")
	require.WithinDuration(t, time.Now().Add(720*time.Hour), *narrowed.ExpiresAt, time.Minute)
	list := b.get("/console/tokens").Body
	require.Contains(t, list, "<code>runs:read runs:write:workflow=billing</code>")
	require.Contains(t, list, narrowed.ExpiresAt.UTC().Format("2006-01-02 15:04"))

	// A token without admin cannot mint at all, let alone beyond its scopes.
	_, reader, err := e.auth.Issue(context.Background(), auth.IssueParams{Name: "reader", Scopes: auth.Scopes{{Permission: auth.RunsRead}}})
	require.NoError(t, err)
	r := e.browser()
	r.signIn(reader)
	p := r.post("/console/tokens", url.Values{"csrf": {r.csrf("/console/keys")}, "name": {"escalated"}, "scopes": {"admin"}})
	require.Equal(t, http.StatusForbidden, p.Status)
	require.Contains(t, p.Body, "lacks the scope admin")
	require.Nil(t, e.tokenNamed("escalated"))
}

// grant stores an OAuth grant approved by principal, holding one fresh access token.
func (e *env) grant(id string, by auth.Principal) (*oauth.Grant, string) {
	e.t.Helper()
	ctx := context.Background()
	access, secret, err := e.auth.Issue(ctx, auth.IssueParams{Name: "oauth " + id, Scopes: auth.Scopes{{Permission: auth.RunsRead}}, Audience: auth.AudienceMCP})
	require.NoError(e.t, err)
	g := &oauth.Grant{ID: id, ClientID: "https://assistant.example/client.json", ClientName: "Assistant " + id,
		PrincipalID: by.ID, PrincipalName: by.Name, Scope: "runs:read", CreatedAt: time.Now().UTC().Truncate(time.Second),
		RefreshHash: auth.Hash("refresh-" + id), RefreshExpiresAt: time.Now().Add(time.Hour).UTC().Truncate(time.Second),
		TokenIDs: []string{access.ID}}
	require.NoError(e.t, e.store.CreateGrant(ctx, g))
	return g, secret
}

func (e *env) grantGone(id string) bool {
	_, err := e.store.GrantByID(context.Background(), id)
	if err != nil {
		require.ErrorIs(e.t, err, oauth.ErrNotFound)
		return true
	}
	return false
}

// TestGrantsPage: an admin sees every grant, others their own; the revoke form needs the
// session's CSRF token and the right to the grant (another's reads as unknown: 404), and
// revokes its access tokens; revoking
// a token from the tokens page revokes the grants it approved, as the API does.
func TestGrantsPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	off := newEnv(t, "")
	b := off.browser()
	b.signIn(off.token)
	require.Contains(t, b.get("/console/grants").Body, "OAuth is off")
	p := b.post("/console/grants/g1/revoke", url.Values{"csrf": {b.csrf("/console/grants")}})
	require.Equal(t, http.StatusNotFound, p.Status)
	require.Contains(t, p.Body, "--public-url")

	e := newOAuthEnv(t)
	admin, err := e.auth.Authenticate(ctx, e.token)
	require.NoError(t, err)
	_, bobSecret, err := e.auth.Issue(ctx, auth.IssueParams{Name: "bob", Scopes: auth.Scopes{{Permission: auth.RunsRead}}})
	require.NoError(t, err)
	bob, err := e.auth.Authenticate(ctx, bobSecret)
	require.NoError(t, err)
	e.grant("g-admin", admin)
	_, bobAccess := e.grant("g-bob", bob)
	e.grant("g-bob-2", bob)

	ab, bb := e.browser(), e.browser()
	ab.signIn(e.token)
	bb.signIn(bobSecret)
	all := ab.get("/console/grants").Body
	for _, want := range []string{"Assistant g-admin", "Assistant g-bob", "Assistant g-bob-2", "<code>assistant.example</code>", "<code>runs:read</code>"} {
		require.Contains(t, all, want)
	}
	own := bb.get("/console/grants").Body
	require.Contains(t, own, "Assistant g-bob")
	require.NotContains(t, own, "Assistant g-admin", "others see only their own grants")

	csrf := bb.csrf("/console/grants")
	tests := []struct {
		name   string
		grant  string
		form   url.Values
		status int
		gone   bool
	}{
		{"no CSRF token", "g-bob", url.Values{}, http.StatusForbidden, false},
		{"another session's CSRF token", "g-bob", url.Values{"csrf": {ab.csrf("/console/grants")}}, http.StatusForbidden, false},
		{"another principal's grant", "g-admin", url.Values{"csrf": {csrf}}, http.StatusNotFound, false},
		{"unknown grant", "g-none", url.Values{"csrf": {csrf}}, http.StatusNotFound, true},
		{"own grant", "g-bob", url.Values{"csrf": {csrf}}, http.StatusSeeOther, true},
	}
	for _, tc := range tests {
		require.Equal(t, tc.status, bb.post("/console/grants/"+tc.grant+"/revoke", tc.form).Status, tc.name)
		require.Equal(t, tc.gone, e.grantGone(tc.grant), tc.name)
	}
	_, err = e.auth.Authenticate(ctx, bobAccess)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "the grant's access tokens are revoked with it")
	require.Contains(t, bb.get("/console/grants").Body, "Grant revoked.")

	require.False(t, e.grantGone("g-bob-2"))
	p = ab.post("/console/tokens/"+bob.ID+"/revoke", url.Values{"csrf": {ab.csrf("/console/tokens")}})
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.True(t, e.grantGone("g-bob-2"), "revoking a token revokes the grants it approved")
	require.False(t, e.grantGone("g-admin"))
}

// TestOAuthAccessTokenCannotSignIn performs the attack of an assistant holding an OAuth
// access token (audience /mcp): signing in to the console with it, then, were that let in,
// minting itself an ordinary admin token that works everywhere and outlives the grant.
// The console refuses it as it refuses an unknown token.
func TestOAuthAccessTokenCannotSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	_, access, err := e.auth.Issue(context.Background(), auth.IssueParams{Name: "oauth access",
		Scopes: auth.Scopes{{Permission: auth.Admin}}, Audience: auth.AudienceMCP})
	require.NoError(t, err)

	b := e.browser()
	p := b.signIn(access)
	require.Equal(t, http.StatusUnauthorized, p.Status, p.Body)
	require.Contains(t, p.Body, "That token is not valid")
	u, err := url.Parse(e.srv.URL)
	require.NoError(t, err)
	require.Empty(t, b.client.Jar.Cookies(u), "no session cookie")

	p = b.get("/console/tokens")
	require.Equal(t, http.StatusSeeOther, p.Status, "not signed in")
	require.True(t, strings.HasPrefix(p.Location, "/console/signin"), p.Location)
	p = b.post("/console/tokens", url.Values{"name": {"escaped"}, "scopes": {"admin"}})
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.Nil(t, e.tokenNamed("escaped"), "no token minted")

	// The admin's own token still signs in.
	a := e.browser()
	require.Equal(t, http.StatusSeeOther, a.signIn(e.token).Status)
	require.Equal(t, http.StatusOK, a.get("/console/tokens").Status)
}

// TestRevokeGrantPageHidesWhichGrantsExist performs the probe through the console: a
// non-admin revokes another principal's grant and an unknown ID. The answers are the same
// bytes, and the other principal's grant and its access token live on.
func TestRevokeGrantPageHidesWhichGrantsExist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newOAuthEnv(t)
	admin, err := e.auth.Authenticate(ctx, e.token)
	require.NoError(t, err)
	_, adminAccess := e.grant("g-admin", admin)
	_, bobSecret, err := e.auth.Issue(ctx, auth.IssueParams{Name: "bob", Scopes: auth.Scopes{{Permission: auth.RunsRead}}})
	require.NoError(t, err)
	b := e.browser()
	b.signIn(bobSecret)
	form := url.Values{"csrf": {b.csrf("/console/grants")}}

	others, unknown := b.post("/console/grants/g-admin/revoke", form), b.post("/console/grants/g-none/revoke", form)
	require.Equal(t, http.StatusNotFound, unknown.Status)
	require.Equal(t, unknown.Status, others.Status)
	require.Equal(t, unknown.Header.Get("Content-Type"), others.Header.Get("Content-Type"))
	require.Equal(t, unknown.Body, others.Body)
	require.False(t, e.grantGone("g-admin"))
	_, err = e.auth.Authenticate(ctx, adminAccess)
	require.NoError(t, err, "the probed grant's access token still works")
}
