package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/oauth"
)

// connect runs the flow for conf, approved with credential, and returns the tokens.
func (e *env) connect(conf *oauth2.Config, credential string) *oauth2.Token {
	e.t.Helper()
	verifier := oauth2.GenerateVerifier()
	tok, err := conf.Exchange(context.Background(), e.authorize(conf, verifier, credential), oauth2.VerifierOption(verifier))
	require.NoError(e.t, err)
	return tok
}

// decode reads a JSON answer and closes it.
func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// liveAccessTokens counts the live OAuth access tokens in the store.
func (e *env) liveAccessTokens() int {
	e.t.Helper()
	ts, err := e.auth.List(context.Background())
	require.NoError(e.t, err)
	n := 0
	for _, t := range ts {
		if t.Audience == auth.AudienceMCP && !t.Expired(e.clock.Now()) {
			n++
		}
	}
	return n
}

// TestGrantEndsWithItsApprover: a grant lives no longer than the token that approved it.
// Its access tokens expire with that token, and once it is revoked (here behind the
// authorization server's back, as with OAuth off) or expired, refreshing fails and
// revokes the grant.
func TestGrantEndsWithItsApprover(t *testing.T) {
	const verifier = "verifier-of-a-pending-code-verifier-of-a-pending-code"
	tests := []struct {
		name  string
		life  time.Duration // of the approving token
		end   func(e *env, approver *auth.Token)
		maxIn time.Duration // the longest an access token may live
	}{
		{"revoked", 0, func(e *env, a *auth.Token) { require.NoError(t, e.auth.Revoke(context.Background(), a.ID)) }, oauth.AccessTTL},
		{"expired", 30 * time.Minute, func(e *env, _ *auth.Token) { e.clock.Advance(30 * time.Second) }, 30 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			approver, secret, err := e.auth.Issue(ctx, auth.IssueParams{Name: "console", Scopes: auth.AdminScopes(), ExpiresIn: tc.life})
			require.NoError(t, err)
			conf := e.config(e.documentClient("Outlived"), "runs:write")
			tok := e.connect(conf, secret)
			require.InDelta(t, tc.maxIn.Seconds(), tok.Extra("expires_in"), 1, "an access token ends no later than its approver")
			if tc.life > 0 {
				e.clock.Advance(tc.life - 30*time.Second)
			}
			pending := e.authorize(conf, verifier, secret)

			tc.end(e, approver)
			_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			require.Equal(t, "invalid_grant", retrieveError(t, err), "refresh re-checks the approver")
			require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", tok.AccessToken))
			require.Empty(t, e.grants(e.admin), "the grant is revoked")
			_, err = conf.Exchange(ctx, pending, oauth2.VerifierOption(verifier))
			require.Equal(t, "invalid_grant", retrieveError(t, err), "a code approved before is refused too")
			require.Zero(t, e.liveAccessTokens())
		})
	}
}

// pausing holds CreateGrant until released, to replay a code while the first exchange
// stores its grant.
type pausing struct {
	oauth.Store
	entered, release chan struct{}
}

func (p *pausing) CreateGrant(ctx context.Context, g *oauth.Grant) error {
	close(p.entered)
	<-p.release
	return p.Store.CreateGrant(ctx, g)
}

// TestCodeReplayDuringExchange replays a code while its first exchange is between using
// the code and storing the grant: the first exchange must fail and keep nothing, and a
// third use must not work either (RFC 6749 §4.1.2, RFC 9700 §4.2.4).
func TestCodeReplayDuringExchange(t *testing.T) {
	e := newEnv(t)
	p := &pausing{Store: e.store, entered: make(chan struct{}), release: make(chan struct{})}
	slow, err := oauth.New(p, e.auth, &oauth.Config{PublicURL: e.url, Now: e.clock.Now})
	require.NoError(t, err)
	slowURL := newPublicOnly(t, slow)

	conf := e.config(e.documentClient("Replayed"), "runs:write")
	verifier := oauth2.GenerateVerifier()
	code := e.authorize(conf, verifier, e.admin)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {conf.ClientID}, "redirect_uri": {redirectURI}}

	var wg sync.WaitGroup
	var first int
	var firstBody map[string]any
	wg.Go(func() {
		resp, err := http.PostForm(slowURL+oauth.TokenPath, form)
		if err == nil {
			first = resp.StatusCode
			firstBody = decode(t, resp)
		}
	})
	<-p.entered
	st, body := e.postForm(oauth.TokenPath, form)
	require.Equal(t, http.StatusBadRequest, st)
	require.Equal(t, "invalid_grant", body["error"], "the replay")
	close(p.release)
	wg.Wait()

	require.Equal(t, http.StatusBadRequest, first, "the first exchange, replayed meanwhile, fails")
	require.Equal(t, "invalid_grant", firstBody["error"])
	require.Nil(t, firstBody["access_token"])
	require.Empty(t, e.grants(e.admin), "no grant outlives the replay")
	require.Zero(t, e.liveAccessTokens(), "the access token the first exchange issued is revoked")
	st, body = e.postForm(oauth.TokenPath, form)
	require.Equal(t, http.StatusBadRequest, st)
	require.Equal(t, "invalid_grant", body["error"], "a third use")
}

// TestNoOpenRedirect is RFC 9700 §4.11.2: a self-described client (a metadata document or
// a dynamic registration) names a phishing page as its redirect URI and sends a broken
// request: GoRunner shows the error instead of sending the person there.
func TestNoOpenRedirect(t *testing.T) {
	e := newEnv(t)
	const phish = "https://phish.example/login"
	st, reg := e.register(`{"client_name":"Registered","redirect_uris":["` + phish + `"]}`)
	require.Equal(t, http.StatusCreated, st, reg)
	clients := map[string]string{
		"metadata document":    e.documentClient("Phisher", phish),
		"dynamic registration": reg["client_id"].(string),
	}
	broken := map[string]url.Values{
		"unknown scope":     {"scope": {"everything"}},
		"implicit grant":    {"response_type": {"token"}},
		"plain PKCE":        {"code_challenge_method": {"plain"}},
		"no code_challenge": {"code_challenge": {""}},
	}
	for kind, client := range clients {
		for name, change := range broken {
			t.Run(kind+"/"+name, func(t *testing.T) {
				q := url.Values{"client_id": {client}, "redirect_uri": {phish}, "response_type": {"code"}, "state": {"s"},
					"code_challenge": {challengeOf(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
				for k, v := range change {
					q[k] = v
				}
				page := e.open(e.browser(), e.url+oauth.AuthorizePath+"?"+q.Encode())
				require.Equal(t, http.StatusBadRequest, page.Status)
				require.Empty(t, page.Header.Get("Location"))
				require.NotContains(t, page.Body, "phish.example")
			})
		}
	}
}

// TestClientDocumentCached: a metadata document is fetched once per its max-age, kept at
// least MinClientDocumentTTL and at most MaxClientDocumentTTL, across authorize and token
// requests.
func TestClientDocumentCached(t *testing.T) {
	tests := []struct {
		cacheControl string
		ttl          time.Duration
	}{
		{"", oauth.MinClientDocumentTTL},
		{"no-store", oauth.MinClientDocumentTTL},
		{"max-age=1", oauth.MinClientDocumentTTL},
		{"public, max-age=3600", time.Hour},
		{"max-age=999999999", oauth.MaxClientDocumentTTL},
	}
	for _, tc := range tests {
		t.Run(tc.cacheControl, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			id := e.documentClient("Cached")
			path := strings.TrimPrefix(id, e.clients.URL)
			e.docsMu.Lock()
			e.caching[path] = tc.cacheControl
			e.docsMu.Unlock()
			fetches := func() int {
				e.docsMu.Lock()
				defer e.docsMu.Unlock()
				return e.fetches[path]
			}
			conf := e.config(id, "runs:write")
			tok := e.connect(conf, e.admin)
			for range 3 {
				e.open(e.browser(), conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
			}
			require.Equal(t, 1, fetches(), "authorize and token requests share one fetch")

			e.clock.Advance(tc.ttl - time.Second)
			_, err := conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			require.NoError(t, err)
			require.Equal(t, 1, fetches(), "still cached")
			e.clock.Advance(time.Second)
			e.open(e.browser(), conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
			require.Equal(t, 2, fetches(), "fetched again once expired")
		})
	}
}

// TestClientDocumentGrantTypes: a document client may use only the grant types its
// document lists; none listed means authorization_code only (RFC 7591 §2), so no refresh
// token is issued and the refresh grant is refused.
func TestClientDocumentGrantTypes(t *testing.T) {
	tests := []struct {
		name    string
		fields  map[string]any
		refresh bool
	}{
		{"none listed", nil, false},
		{"authorization_code only", map[string]any{"grant_types": []string{"authorization_code"}}, false},
		{"both", map[string]any{"grant_types": []string{"authorization_code", "refresh_token"}}, true},
	}
	e := newEnv(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conf := e.config(e.documentClientWith(tc.name, tc.fields), "runs:write")
			tok := e.connect(conf, e.admin)
			require.Equal(t, tc.refresh, tok.RefreshToken != "", "a refresh token only for a client that may refresh")
			st, body := e.postForm(oauth.TokenPath, url.Values{"grant_type": {"refresh_token"}, "client_id": {conf.ClientID},
				"refresh_token": {"grr_whatever"}})
			require.Equal(t, http.StatusBadRequest, st)
			want := "unauthorized_client"
			if tc.refresh {
				want = "invalid_grant"
			}
			require.Equal(t, want, body["error"])
		})
	}
}

// TestRegisteredClientsBounded: registration stops at Config.MaxClients; clients that hold
// no grant UnusedClientTTL after registering are swept away, making room; a client with a
// grant stays.
func TestRegisteredClientsBounded(t *testing.T) {
	e := newEnvWith(t, func(c *oauth.Config) { c.MaxClients = 3 })
	ctx := context.Background()
	ids := make([]string, 3)
	for i := range ids {
		st, reg := e.register(`{"client_name":"C` + strconv.Itoa(i) + `","redirect_uris":["` + redirectURI + `"]}`)
		require.Equal(t, http.StatusCreated, st, reg)
		ids[i] = reg["client_id"].(string)
	}
	used := e.connect(e.config(ids[0], "runs:write"), e.admin)

	resp, err := http.Post(e.url+oauth.RegisterPath, "application/json", strings.NewReader(`{"redirect_uris":["`+redirectURI+`"]}`))
	require.NoError(t, err)
	body := decode(t, resp)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Equal(t, "temporarily_unavailable", body["error"])
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	e.clock.Advance(oauth.UnusedClientTTL + oauth.SweepInterval)
	st, reg := e.register(`{"redirect_uris":["` + redirectURI + `"]}`)
	require.Equal(t, http.StatusCreated, st, reg, "the sweep made room")
	for _, id := range ids[1:] {
		_, err := e.store.ClientByID(ctx, id)
		require.ErrorIs(t, err, oauth.ErrNotFound, "an unused client is deleted")
	}
	_, err = e.store.ClientByID(ctx, ids[0])
	require.NoError(t, err, "a client holding a grant stays")
	_, err = e.config(ids[0], "runs:write").TokenSource(ctx, &oauth2.Token{RefreshToken: used.RefreshToken}).Token()
	require.NoError(t, err)
}

// TestExpiredGrantsSwept: a grant whose refresh token expired is deleted with its access
// token by the next sweep, which a write starts once SweepInterval has passed.
func TestExpiredGrantsSwept(t *testing.T) {
	e := newEnv(t)
	conf := e.config(e.documentClient("Idle"), "runs:write")
	e.connect(conf, e.admin)
	live := e.connect(conf, e.admin)
	require.Len(t, e.grants(e.admin), 2)
	tokens, err := e.auth.List(context.Background())
	require.NoError(t, err)

	e.clock.Advance(oauth.RefreshTTL - time.Hour)
	live, err = conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: live.RefreshToken}).Token()
	require.NoError(t, err, "this refresh sweeps nothing yet")
	require.Len(t, e.grants(e.admin), 2)

	e.clock.Advance(time.Hour + oauth.SweepInterval)
	st, reg := e.register(`{"redirect_uris":["` + redirectURI + `"]}`)
	require.Equal(t, http.StatusCreated, st, reg)
	grants := e.grants(e.admin)
	require.Len(t, grants, 1, "the idle grant is swept, the refreshed one stays")
	after, err := e.auth.List(context.Background())
	require.NoError(t, err)
	require.Len(t, after, len(tokens)-1, "with its access token")
}

// TestRevokeOnlyOwnTokens is RFC 7009 §2.1: a client revokes only tokens issued to it;
// another client's token is answered 200 and stays valid.
func TestRevokeOnlyOwnTokens(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	victim := e.config(e.documentClient("Victim"), "runs:write")
	attacker := e.documentClient("Attacker")
	tests := []struct {
		name  string
		token func(*oauth2.Token) string
	}{
		{"access token", func(t *oauth2.Token) string { return t.AccessToken }},
		{"refresh token", func(t *oauth2.Token) string { return t.RefreshToken }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := e.connect(victim, e.admin)
			st, _ := e.postForm(oauth.RevokePath, url.Values{"token": {tc.token(tok)}, "client_id": {attacker}})
			require.Equal(t, http.StatusOK, st)
			_, err := e.mcpTools(bearerClient(tok.AccessToken))
			require.NoError(t, err, "another client's revocation has no effect")

			st, _ = e.postForm(oauth.RevokePath, url.Values{"token": {tc.token(tok)}, "client_id": {victim.ClientID}})
			require.Equal(t, http.StatusOK, st)
			require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", tok.AccessToken), "the owner's does")
			_, err = victim.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			if tc.name == "refresh token" {
				require.Equal(t, "invalid_grant", retrieveError(t, err))
			} else {
				require.NoError(t, err, "revoking an access token leaves the grant")
			}
		})
	}
}

// TestConsentPageCannotBeSpoofed performs consent phishing through the two things the
// authorize page shows of a client. A client registers (or describes in its metadata
// document) the redirect URI https://сlaude.ai/… — a Cyrillic с, raw or percent-encoded —
// so that the page says it sends the person back to a host they trust; or names itself
// with a right-to-left override that reorders the text after it. Each is refused where it
// is given, so no page ever shows it; the same host in its xn-- form is a client as any.
func TestConsentPageCannotBeSpoofed(t *testing.T) {
	e := newEnv(t)
	const lookalike = "https://\u0441laude.ai/api/mcp/auth_callback"
	for name, tc := range map[string]struct{ body, code string }{
		"redirect host in another script": {`{"redirect_uris":["` + lookalike + `"]}`, "invalid_redirect_uri"},
		"redirect host percent-encoded":   {`{"redirect_uris":["https://%D1%81laude.ai/api/mcp/auth_callback"]}`, "invalid_redirect_uri"},
		"redirect path not ASCII":         {`{"redirect_uris":["https://a.example/\u0441b"]}`, "invalid_redirect_uri"},
		"name with a bidi override":       {`{"redirect_uris":["https://a.example/cb"],"client_name":"Claude \u202etxet"}`, "invalid_client_metadata"},
		"name with an escape":             {`{"redirect_uris":["https://a.example/cb"],"client_name":"Claude\u001b[8m"}`, "invalid_client_metadata"},
	} {
		t.Run(name, func(t *testing.T) {
			st, body := e.register(tc.body)
			require.Equal(t, http.StatusBadRequest, st, body)
			require.Equal(t, tc.code, body["error"])
		})
	}

	client := e.documentClient("Lookalike", lookalike)
	q := url.Values{"client_id": {client}, "redirect_uri": {lookalike}, "response_type": {"code"}, "state": {"s"},
		"code_challenge": {challengeOf(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
	page := e.open(e.browser(), e.url+oauth.AuthorizePath+"?"+q.Encode())
	require.Equal(t, http.StatusBadRequest, page.Status, page.Body)
	require.Contains(t, page.Body, "must be ASCII")
	require.NotContains(t, page.Body, "Approve")

	// A client registered before these rules (written to the store as registration did
	// then) is refused at authorize: no consent page names it.
	old := &oauth.Client{ID: "registered-before", Name: "Lookalike", RedirectURIs: []string{lookalike},
		GrantTypes: []string{"authorization_code", "refresh_token"}, CreatedAt: e.clock.Now()}
	require.NoError(t, e.store.CreateClient(context.Background(), old))
	q.Set("client_id", old.ID)
	page = e.open(e.browser(), e.url+oauth.AuthorizePath+"?"+q.Encode())
	require.Equal(t, http.StatusBadRequest, page.Status, page.Body)
	require.Contains(t, page.Body, "register it again")
	require.NotContains(t, page.Body, "Approve")

	const punycode = "https://xn--laude-3ve.ai/api/mcp/auth_callback"
	st, reg := e.register(`{"client_name":"Honest","redirect_uris":["` + punycode + `"]}`)
	require.Equal(t, http.StatusCreated, st, reg)
	q.Set("client_id", reg["client_id"].(string))
	q.Set("redirect_uri", punycode)
	page = e.open(e.browser(), e.url+oauth.AuthorizePath+"?"+q.Encode())
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.Contains(t, page.Body, "sends you back to <strong>xn--laude-3ve.ai</strong>")
}
