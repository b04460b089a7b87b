package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/oauth/oauthtest"
)

// oauthAccessToken runs the OAuth flow an MCP client runs against e (dynamic
// registration, authorize with PKCE approved by the admin token, code exchange) and
// returns the access token it gets: valid at /mcp only.
func (e *env) oauthAccessToken(scopes ...string) string {
	e.t.Helper()
	const redirect = "http://127.0.0.1:9/callback"
	res, err := http.Post(e.srv.URL+oauth.RegisterPath, "application/json",
		strings.NewReader(`{"client_name":"Assistant","redirect_uris":["`+redirect+`"]}`))
	require.NoError(e.t, err)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(e.t, json.NewDecoder(res.Body).Decode(&reg))
	res.Body.Close()
	require.Equal(e.t, http.StatusCreated, res.StatusCode)

	conf := &oauth2.Config{ClientID: reg.ClientID, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.srv.URL + oauth.AuthorizePath, TokenURL: e.srv.URL + oauth.TokenPath,
			AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	b := oauthtest.Browser(e.t)
	page := oauthtest.Open(e.t, b, conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
	require.Equal(e.t, http.StatusOK, page.Status, page.Body)
	_, q := oauthtest.Callback(e.t, oauthtest.Submit(e.t, b, page, e.token, "approve", page.Scopes...))
	tok, err := conf.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(e.t, err)
	return tok.AccessToken
}

// TestOAuthAccessTokenCannotSignIn performs the attack of an assistant holding an OAuth
// access token (audience /mcp): signing in to the console with it, then, were that let in,
// minting itself an ordinary admin token that works everywhere and outlives the grant.
// The console refuses it as it refuses an unknown token.
func TestOAuthAccessTokenCannotSignIn(t *testing.T) {
	t.Parallel()
	e := newOAuthEnv(t)
	access := e.oauthAccessToken("admin")

	b := e.browser()
	p := b.signIn(access)
	require.Equal(t, http.StatusUnauthorized, p.Status, p.Body)
	require.Contains(t, p.Body, "That token is not valid")
	require.Empty(t, b.client.Jar.Cookies(mustURL(t, e.srv.URL)), "no session cookie")

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

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}
