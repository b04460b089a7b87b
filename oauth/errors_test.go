package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/oauth"
)

func challengeOf(verifier string) string {
	s := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// TestAuthorizeErrors is RFC 6749 §4.1.2.1 with RFC 9700 §4.11.2: a request whose client
// or redirect URI cannot be verified is answered with a page, and so is any other invalid
// request: the redirect URI comes from a document anyone can publish, so redirecting
// there before the person saw the consent page would make GoRunner an open redirector.
// Only the person's own answer (deny) goes back to the redirect URI, with the state.
func TestAuthorizeErrors(t *testing.T) {
	e := newEnv(t)
	client := e.documentClient("Errors")
	verifier := oauth2.GenerateVerifier()
	good := url.Values{"client_id": {client}, "redirect_uri": {redirectURI}, "response_type": {"code"},
		"state": {"xyz"}, "code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"},
		"scope": {"runs:write"}}
	with := func(change func(q url.Values)) url.Values {
		q := url.Values{}
		for k, v := range good {
			q[k] = append([]string(nil), v...)
		}
		change(q)
		return q
	}
	pages := []struct {
		name string
		q    url.Values
		says string
	}{
		{"no client_id", with(func(q url.Values) { q.Del("client_id") }), "no client_id"},
		{"unregistered client", with(func(q url.Values) { q.Set("client_id", "nope") }), "not registered"},
		{"document not served", with(func(q url.Values) { q.Set("client_id", e.clients.URL+"/missing.json") }), couldNotFetch},
		{"wrong redirect_uri", with(func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:1/other") }), "not one of the client"},
		{"redirect_uri with a different query", with(func(q url.Values) { q.Set("redirect_uri", redirectURI+"?x=1") }), "not one of the client"},
		{"http client_id off loopback", with(func(q url.Values) { q.Set("client_id", "http://example.com/client.json") }), "https"},
		{"client_id without a path", with(func(q url.Values) { q.Set("client_id", e.clients.URL) }), "path"},
		{"repeated redirect_uri", with(func(q url.Values) { q.Add("redirect_uri", redirectURI) }), "repeats"},
	}
	for _, tc := range pages {
		t.Run(tc.name, func(t *testing.T) {
			page := e.open(e.browser(), e.url+oauth.AuthorizePath+"?"+tc.q.Encode())
			require.Equal(t, http.StatusBadRequest, page.Status)
			require.Empty(t, page.Header.Get("Location"), "never a redirect to an unverified URI")
			require.Contains(t, page.Body, tc.says)
		})
	}
	invalid := []struct {
		name, code string
		q          url.Values
	}{
		{"no response_type", "invalid_request", with(func(q url.Values) { q.Del("response_type") })},
		{"implicit grant", "unsupported_response_type", with(func(q url.Values) { q.Set("response_type", "token") })},
		{"no code_challenge", "invalid_request", with(func(q url.Values) { q.Del("code_challenge") })},
		{"plain PKCE", "invalid_request", with(func(q url.Values) { q.Set("code_challenge_method", "plain") })},
		{"no challenge method", "invalid_request", with(func(q url.Values) { q.Del("code_challenge_method") })},
		{"malformed challenge", "invalid_request", with(func(q url.Values) { q.Set("code_challenge", "short") })},
		{"unknown scope", "invalid_scope", with(func(q url.Values) { q.Set("scope", "runs:write everything") })},
		{"another resource", "invalid_target", with(func(q url.Values) { q.Set("resource", "https://elsewhere.example/mcp") })},
		{"repeated scope", "invalid_request", with(func(q url.Values) { q.Add("scope", "admin") })},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			page := e.open(e.browser(), e.url+oauth.AuthorizePath+"?"+tc.q.Encode())
			require.Equal(t, http.StatusBadRequest, page.Status)
			require.Empty(t, page.Header.Get("Location"), "an invalid request is never redirected")
			require.Contains(t, page.Body, tc.code)
			require.NotContains(t, page.Body, "csrf", "no consent form")
		})
	}
	t.Run("missing state passes through as missing", func(t *testing.T) {
		b := e.browser()
		page := e.open(b, e.url+oauth.AuthorizePath+"?"+with(func(q url.Values) { q.Del("state") }).Encode())
		require.Equal(t, http.StatusOK, page.Status)
		q := callback(t, e.submit(b, page, e.admin, "approve", "runs:write"))
		require.NotEmpty(t, q.Get("code"))
		require.False(t, q.Has("state"))
	})
	t.Run("deny", func(t *testing.T) {
		b := e.browser()
		page := e.open(b, e.url+oauth.AuthorizePath+"?"+good.Encode())
		q := callback(t, e.submit(b, page, "", "deny"))
		require.Equal(t, "access_denied", q.Get("error"))
		require.Equal(t, "xyz", q.Get("state"))
	})
	t.Run("page shows the client, its redirect host and the scopes", func(t *testing.T) {
		page := e.open(e.browser(), e.url+oauth.AuthorizePath+"?"+with(func(q url.Values) { q.Set("scope", "runs:write runs:read:workflow=greet") }).Encode())
		require.Equal(t, http.StatusOK, page.Status)
		require.Contains(t, page.Body, "Connect <strong>Errors</strong>")
		require.Contains(t, page.Body, "<strong>127.0.0.1:1</strong>")
		require.Equal(t, []string{"runs:write", "runs:read:workflow=greet"}, page.Scopes)
		require.Contains(t, page.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
		require.Contains(t, page.Header.Get("Set-Cookie"), "SameSite=Strict")
		require.Contains(t, page.Header.Get("Set-Cookie"), "HttpOnly")
	})
}

// TestAuthorizeForm covers the form: CSRF, sign-in failures and scopes beyond the token.
func TestAuthorizeForm(t *testing.T) {
	e := newEnv(t)
	conf := e.config(e.documentClient("Form"), "runs:write", "workflows:write")
	authURL := conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	_, reader, err := e.auth.Issue(context.Background(), auth.IssueParams{Name: "reader", Scopes: mustScopes(t, "runs:write")})
	require.NoError(t, err)

	t.Run("no CSRF cookie", func(t *testing.T) {
		page := e.open(e.browser(), authURL)
		got := e.submit(e.browser(), page, e.admin, "approve", "runs:write") // another browser: no cookie
		require.Equal(t, http.StatusForbidden, got.Status)
		require.Empty(t, got.Header.Get("Location"))
	})
	t.Run("CSRF token not the cookie's", func(t *testing.T) {
		b := e.browser()
		page := e.open(b, authURL)
		page.Form.Set("csrf", "forged")
		require.Equal(t, http.StatusForbidden, e.submit(b, page, e.admin, "approve", "runs:write").Status)
	})
	t.Run("bad token", func(t *testing.T) {
		b := e.browser()
		page := e.open(b, authURL)
		got := e.submit(b, page, "gr_wrong", "approve", "runs:write")
		require.Equal(t, http.StatusUnauthorized, got.Status)
		require.Contains(t, got.Body, "Sign-in failed")
		require.NotEmpty(t, got.Form.Get("csrf"), "the page is shown again to retry")
	})
	t.Run("scopes beyond the token", func(t *testing.T) {
		b := e.browser()
		page := e.open(b, authURL)
		got := e.submit(b, page, reader, "approve", "runs:write", "workflows:write")
		require.Equal(t, http.StatusBadRequest, got.Status)
		require.Contains(t, got.Body, "does not cover")
		q := callback(t, e.submit(b, got, reader, "approve", "runs:write"))
		require.NotEmpty(t, q.Get("code"), "narrowed to what the token holds, it passes")
	})
	t.Run("a scope not asked for", func(t *testing.T) {
		b := e.browser()
		page := e.open(b, authURL)
		got := e.submit(b, page, e.admin, "approve", "admin")
		require.Equal(t, http.StatusBadRequest, got.Status)
		require.Contains(t, got.Body, "was not asked for")
	})
	t.Run("no scope ticked", func(t *testing.T) {
		b := e.browser()
		page := e.open(b, authURL)
		require.Equal(t, http.StatusBadRequest, e.submit(b, page, e.admin, "approve").Status)
	})
	t.Run("an access token cannot approve", func(t *testing.T) {
		_, secret, err := e.auth.Issue(context.Background(), auth.IssueParams{Name: "mcp", Scopes: auth.AdminScopes(), Audience: auth.AudienceMCP, ExpiresIn: time.Hour})
		require.NoError(t, err)
		b := e.browser()
		page := e.open(b, authURL)
		require.Equal(t, http.StatusUnauthorized, e.submit(b, page, secret, "approve", "runs:write").Status)
	})
}

// tokenCase is one token request and the RFC 6749 §5.2 error it gets.
type tokenCase struct {
	name   string
	form   url.Values
	status int
	code   string
}

// TestTokenErrors is RFC 6749 §5.2 at the token endpoint.
func TestTokenErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	client := e.documentClient("Token Errors")
	other := e.documentClient("Other")
	conf := e.config(client, "runs:write")
	verifier := oauth2.GenerateVerifier()
	_, reg := e.register(`{"client_name":"No Refresh","redirect_uris":["` + redirectURI + `"],"grant_types":["authorization_code"]}`)
	noRefresh := reg["client_id"].(string)
	noRefreshConf := e.config(noRefresh, "runs:write")
	noRefreshTok, err := noRefreshConf.Exchange(ctx, e.authorize(noRefreshConf, verifier, e.admin), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	live, err := conf.Exchange(ctx, e.authorize(conf, verifier, e.admin), oauth2.VerifierOption(verifier))
	require.NoError(t, err)

	codeForm := func(code string) url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
			"client_id": {client}, "code_verifier": {verifier}}
	}
	change := func(f url.Values, k, v string) url.Values {
		f.Set(k, v)
		if v == "" {
			f.Del(k)
		}
		return f
	}
	cases := []tokenCase{
		{"no grant_type", change(codeForm(e.authorize(conf, verifier, e.admin)), "grant_type", ""), 400, "invalid_request"},
		{"password grant", url.Values{"grant_type": {"password"}, "username": {"a"}, "password": {"b"}, "client_id": {client}}, 400, "unsupported_grant_type"},
		{"client_credentials grant", url.Values{"grant_type": {"client_credentials"}, "client_id": {client}}, 400, "unsupported_grant_type"},
		{"no client_id", change(codeForm(e.authorize(conf, verifier, e.admin)), "client_id", ""), 400, "invalid_request"},
		{"no code", change(codeForm(""), "code", ""), 400, "invalid_request"},
		{"no code_verifier", change(codeForm(e.authorize(conf, verifier, e.admin)), "code_verifier", ""), 400, "invalid_request"},
		{"malformed code_verifier", change(codeForm(e.authorize(conf, verifier, e.admin)), "code_verifier", "short"), 400, "invalid_request"},
		{"code_verifier of 42 characters", change(codeForm(e.authorize(conf, verifier, e.admin)), "code_verifier", strings.Repeat("a", 42)), 400, "invalid_request"},
		{"code_verifier of 129 characters", change(codeForm(e.authorize(conf, verifier, e.admin)), "code_verifier", strings.Repeat("a", 129)), 400, "invalid_request"},
		{"code_verifier outside the unreserved set", change(codeForm(e.authorize(conf, verifier, e.admin)), "code_verifier", strings.Repeat("a", 42)+"+"), 400, "invalid_request"},
		{"unregistered client", change(codeForm(e.authorize(conf, verifier, e.admin)), "client_id", "nope"), 400, "invalid_client"},
		{"http client_id off loopback", change(codeForm(e.authorize(conf, verifier, e.admin)), "client_id", "http://example.com/c.json"), 400, "invalid_client"},
		{"unknown code", codeForm("made-up"), 400, "invalid_grant"},
		{"wrong verifier", change(codeForm(e.authorize(conf, verifier, e.admin)), "code_verifier", oauth2.GenerateVerifier()), 400, "invalid_grant"},
		{"wrong redirect_uri", change(codeForm(e.authorize(conf, verifier, e.admin)), "redirect_uri", "http://127.0.0.1:1/other"), 400, "invalid_grant"},
		{"code of another client", change(codeForm(e.authorize(conf, verifier, e.admin)), "client_id", other), 400, "invalid_grant"},
		{"another resource", change(codeForm(e.authorize(conf, verifier, e.admin)), "resource", "https://elsewhere.example/mcp"), 400, "invalid_target"},
		{"refresh not registered", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {noRefreshTok.RefreshToken}, "client_id": {noRefresh}}, 400, "unauthorized_client"},
		{"no refresh_token", url.Values{"grant_type": {"refresh_token"}, "client_id": {client}}, 400, "invalid_request"},
		{"unknown refresh_token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"grr_x"}, "client_id": {client}}, 400, "invalid_grant"},
		{"refresh_token of another client", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {live.RefreshToken}, "client_id": {other}}, 400, "invalid_grant"},
		{"refresh for more scopes", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {live.RefreshToken}, "client_id": {client}, "scope": {"runs:write admin"}}, 400, "invalid_scope"},
		{"refresh for an unknown scope", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {live.RefreshToken}, "client_id": {client}, "scope": {"root"}}, 400, "invalid_scope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, body := e.postForm(oauth.TokenPath, tc.form)
			require.Equal(t, tc.status, st, body)
			require.Equal(t, tc.code, body["error"], body)
			require.NotEmpty(t, body["error_description"])
		})
	}

	t.Run("a code tried with a wrong verifier is used up", func(t *testing.T) {
		code := e.authorize(conf, verifier, e.admin)
		st, _ := e.postForm(oauth.TokenPath, change(codeForm(code), "code_verifier", oauth2.GenerateVerifier()))
		require.Equal(t, 400, st)
		st, body := e.postForm(oauth.TokenPath, codeForm(code))
		require.Equal(t, 400, st)
		require.Equal(t, "invalid_grant", body["error"])
	})
	t.Run("expired code", func(t *testing.T) {
		code := e.authorize(conf, verifier, e.admin)
		e.clock.Advance(oauth.CodeTTL)
		st, body := e.postForm(oauth.TokenPath, codeForm(code))
		require.Equal(t, 400, st)
		require.Equal(t, "invalid_grant", body["error"])
		require.Contains(t, body["error_description"], "expired")
	})
	t.Run("not a form", func(t *testing.T) {
		resp, err := http.Post(e.url+oauth.TokenPath, "application/json", strings.NewReader(`{"grant_type":"authorization_code"}`))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 400, resp.StatusCode)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	})
	t.Run("repeated parameter", func(t *testing.T) {
		f := codeForm(e.authorize(conf, verifier, e.admin))
		f.Add("code", "again")
		st, body := e.postForm(oauth.TokenPath, f)
		require.Equal(t, 400, st)
		require.Equal(t, "invalid_request", body["error"])
	})
	t.Run("form one past the limit", func(t *testing.T) {
		f := codeForm(e.authorize(conf, verifier, e.admin))
		f.Set("pad", strings.Repeat("x", oauth.MaxFormBytes))
		st, body := e.postForm(oauth.TokenPath, f)
		require.Equal(t, 400, st)
		require.Equal(t, "invalid_request", body["error"])
	})
	t.Run("client_id in Basic auth differs from the form", func(t *testing.T) {
		req, err := http.NewRequest("POST", e.url+oauth.TokenPath, strings.NewReader(codeForm("x").Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(other, "")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 400, resp.StatusCode)
	})
	t.Run("unknown client in Basic auth is a 401", func(t *testing.T) {
		f := codeForm("x")
		f.Del("client_id")
		req, err := http.NewRequest("POST", e.url+oauth.TokenPath, strings.NewReader(f.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("nope", "")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
	})
	t.Run("revoke without token or client", func(t *testing.T) {
		st, body := e.postForm(oauth.RevokePath, url.Values{"client_id": {client}})
		require.Equal(t, 400, st)
		require.Equal(t, "invalid_request", body["error"])
		st, body = e.postForm(oauth.RevokePath, url.Values{"token": {live.RefreshToken}})
		require.Equal(t, 400, st)
		require.Equal(t, "invalid_request", body["error"])
	})
}

// TestClientDocumentLimits fetches metadata documents that break the rules, for real.
func TestClientDocumentLimits(t *testing.T) {
	e := newEnv(t)
	open := func(clientID string) consent {
		q := url.Values{"client_id": {clientID}, "redirect_uri": {redirectURI}, "response_type": {"code"},
			"code_challenge": {challengeOf(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
		return e.open(e.browser(), e.url+oauth.AuthorizePath+"?"+q.Encode())
	}
	doc := func(id string, extra string) string {
		return fmt.Sprintf(`{"client_id":%q,"client_name":"X","redirect_uris":[%q]%s}`, id, redirectURI, extra)
	}
	big := e.clients.URL + "/big.json"
	e.serveDocument("/big.json", doc(big, `,"pad":"`+strings.Repeat("x", oauth.MaxClientDocumentBytes)+`"`))
	fits := e.clients.URL + "/fits.json"
	d := doc(fits, `,"pad":""`)
	e.serveDocument("/fits.json", doc(fits, `,"pad":"`+strings.Repeat("x", oauth.MaxClientDocumentBytes-len(d))+`"`))
	mismatch := e.clients.URL + "/mismatch.json"
	e.serveDocument("/mismatch.json", doc("https://attacker.example/client.json", ""))
	secretClient := e.clients.URL + "/secret.json"
	e.serveDocument("/secret.json", doc(secretClient, `,"token_endpoint_auth_method":"client_secret_basic"`))
	badRedirect := e.clients.URL + "/bad-redirect.json"
	e.serveDocument("/bad-redirect.json", fmt.Sprintf(`{"client_id":%q,"redirect_uris":["http://evil.example/cb"]}`, badRedirect))
	moved := httptestRedirect(t, e.clients.URL+"/fits.json")

	require.Equal(t, http.StatusOK, open(fits).Status, "a document of exactly the limit is read")
	for name, tc := range map[string]struct{ id, says string }{
		"one byte past the size limit": {big, couldNotFetch},
		"client_id differs":            {mismatch, couldNotFetch},
		"secret-based auth method":     {secretClient, "public clients"},
		"http redirect off loopback":   {badRedirect, "http is allowed only on a loopback host"},
		"redirect refused":             {moved, couldNotFetch},
	} {
		t.Run(name, func(t *testing.T) {
			page := open(tc.id)
			require.Equal(t, http.StatusBadRequest, page.Status)
			require.Contains(t, page.Body, tc.says)
		})
	}
}

// httptestRedirect serves a document address that redirects to target.
func httptestRedirect(t *testing.T, target string) string {
	t.Helper()
	srv := newRedirectServer(target)
	t.Cleanup(srv.Close)
	return srv.URL + "/moved.json"
}

// TestEgressOffLoopback: served on a public URL, GoRunner accepts no http client_id and
// does not fetch documents from loopback or private addresses, even over https.
func TestEgressOffLoopback(t *testing.T) {
	e := newEnv(t)
	s, err := oauth.New(e.store, e.auth, &oauth.Config{PublicURL: "https://runner.example"})
	require.NoError(t, err)
	public := newPublicOnly(t, s)
	for name, tc := range map[string]struct{ id, says string }{
		"loopback http client_id":      {e.documentClient("Local"), "must be an https URL"},
		"https to loopback":            {"https://127.0.0.1:1/client.json", "not public"},
		"https to a private host":      {"https://10.0.0.1:1/client.json", "not public"},
		"a name resolving to loopback": {"https://localhost:1/client.json", "not public"},
		"IPv4-mapped loopback":         {"https://[::ffff:127.0.0.1]:1/client.json", "not public"},
	} {
		t.Run(name, func(t *testing.T) {
			q := url.Values{"client_id": {tc.id}, "redirect_uri": {redirectURI}, "response_type": {"code"},
				"code_challenge": {challengeOf(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
			page := e.open(e.browser(), public+oauth.AuthorizePath+"?"+q.Encode())
			require.Equal(t, http.StatusBadRequest, page.Status)
			require.Contains(t, page.Body, tc.says)
			if strings.Contains(tc.id, "localhost") {
				require.NotContains(t, page.Body, "127.0.0.1", "the page does not tell what a name resolves to")
			}
		})
	}
	_, err = oauth.New(e.store, e.auth, &oauth.Config{PublicURL: "ftp://runner.example"})
	require.ErrorIs(t, err, oauth.ErrInvalidPublicURL)
}

// TestRegistrationLimits: size, redirect URIs and rate, each one past its limit.
func TestRegistrationLimits(t *testing.T) {
	e := newEnv(t)
	uris := func(n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%q", fmt.Sprintf("https://a.example/cb%d", i))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	for name, tc := range map[string]struct {
		body   string
		status int
		code   string
	}{
		"too many redirect URIs":  {`{"redirect_uris":` + uris(oauth.MaxRedirectURIs+1) + `}`, 400, "invalid_redirect_uri"},
		"no redirect URIs":        {`{"client_name":"x"}`, 400, "invalid_redirect_uri"},
		"http off loopback":       {`{"redirect_uris":["http://a.example/cb"]}`, 400, "invalid_redirect_uri"},
		"javascript scheme":       {`{"redirect_uris":["javascript:alert(1)"]}`, 400, "invalid_redirect_uri"},
		"fragment":                {`{"redirect_uris":["https://a.example/cb#x"]}`, 400, "invalid_redirect_uri"},
		"implicit grant":          {`{"redirect_uris":["https://a.example/cb"],"grant_types":["implicit"]}`, 400, "invalid_client_metadata"},
		"name one past the limit": {`{"redirect_uris":["https://a.example/cb"],"client_name":"` + strings.Repeat("n", oauth.MaxClientNameBytes+1) + `"}`, 400, "invalid_client_metadata"},
		"not JSON":                {`redirect_uris=x`, 400, "invalid_client_metadata"},
		"body one past the limit": {`{"redirect_uris":["https://a.example/cb"],"pad":"` + strings.Repeat("x", oauth.MaxRegistrationBytes) + `"}`, 413, "invalid_client_metadata"},
	} {
		t.Run(name, func(t *testing.T) {
			st, body := e.register(tc.body)
			require.Equal(t, tc.status, st, body)
			require.Equal(t, tc.code, body["error"])
		})
	}
	st, body := e.register(`{"redirect_uris":["https://a.example/cb"],"client_name":"` + strings.Repeat("n", oauth.MaxClientNameBytes) + `"}`)
	require.Equal(t, http.StatusCreated, st, body)
	require.Equal(t, []any{"https://a.example/cb"}, body["redirect_uris"])

	rated := newEnv(t)
	for range oauth.DefaultRegistrationsPerMinute {
		st, body := rated.register(`{"redirect_uris":["cursor://anysphere.cursor-retrieval/oauth/callback"]}`)
		require.Equal(t, http.StatusCreated, st, body)
	}
	resp, err := http.Post(rated.url+oauth.RegisterPath, "application/json", strings.NewReader(`{"redirect_uris":["https://a.example/cb"]}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "one past the rate limit")
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	rated.clock.Advance(time.Minute)
	st, _ = rated.register(`{"redirect_uris":["https://a.example/cb"]}`)
	require.Equal(t, http.StatusCreated, st, "a new window")
}

// TestWrongMethod: every endpoint answers a method it does not serve with 405 and an Allow
// header (RFC 9110 §15.5.6); the JSON endpoints also with an RFC 6749 §5.2 error.
func TestWrongMethod(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		method, path, allow string
		json                bool
	}{
		{"GET", oauth.TokenPath, "POST", true},
		{"PUT", oauth.RevokePath, "POST", true},
		{"GET", oauth.RegisterPath, "POST", true},
		{"POST", oauth.MetadataPath, "GET, HEAD", false},
		{"DELETE", oauth.AuthorizePath, "GET, POST", false},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			req, err := http.NewRequest(c.method, e.url+c.path, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			require.Equal(t, c.allow, resp.Header.Get("Allow"))
			if c.json {
				require.Equal(t, "invalid_request", decode(t, resp)["error"])
			}
		})
	}
}
