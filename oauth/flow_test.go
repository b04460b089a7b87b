package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/oauth"
)

func getJSON(t *testing.T, u string) map[string]any {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// TestDiscovery follows what an MCP client does: the 401's resource_metadata, then the
// authorization server it names, then that server's metadata.
func TestDiscovery(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Post(e.url+"/mcp", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	challenge := resp.Header.Get("WWW-Authenticate")
	require.Contains(t, challenge, `resource_metadata="`+e.url+`/.well-known/oauth-protected-resource/mcp"`)

	prm := getJSON(t, e.url+"/.well-known/oauth-protected-resource/mcp")
	require.Equal(t, e.url+"/mcp", prm["resource"])
	require.Equal(t, []any{e.url}, prm["authorization_servers"])
	require.Equal(t, []any{"runs:write", "runs:read"}, prm["scopes_supported"], "clients that name no scope ask for these: never admin")

	md := getJSON(t, e.url+oauth.MetadataPath)
	require.Equal(t, e.url, md["issuer"])
	require.Equal(t, e.url+"/oauth/authorize", md["authorization_endpoint"])
	require.Equal(t, e.url+"/oauth/token", md["token_endpoint"])
	require.Equal(t, e.url+"/oauth/register", md["registration_endpoint"])
	require.Equal(t, e.url+"/oauth/revoke", md["revocation_endpoint"])
	require.Equal(t, []any{"S256"}, md["code_challenge_methods_supported"])
	require.Equal(t, []any{"authorization_code", "refresh_token"}, md["grant_types_supported"])
	require.Equal(t, true, md["client_id_metadata_document_supported"])
}

// retrieveError is the RFC 6749 §5.2 error code x/oauth2 got.
func retrieveError(t *testing.T, err error) string {
	t.Helper()
	var re *oauth2.RetrieveError
	require.True(t, errors.As(err, &re), "want an OAuth error, got %v", err)
	return re.ErrorCode
}

// TestFlowWithClientMetadataDocument is the whole flow of a client identified by a
// metadata document served on loopback: PKCE, the access token on /mcp (and nowhere
// else), refresh rotation, and the reuse of a rotated-away refresh token revoking the
// grant with every token in it.
func TestFlowWithClientMetadataDocument(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	conf := e.config(e.documentClient("Test Assistant"), "runs:write", "runs:read")
	verifier := oauth2.GenerateVerifier()
	code := e.authorize(conf, verifier, e.admin)

	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	require.Equal(t, "Bearer", tok.TokenType)
	require.NotEmpty(t, tok.RefreshToken)
	require.Equal(t, "runs:write runs:read", tok.Extra("scope"))
	require.InDelta(t, oauth.AccessTTL.Seconds(), tok.Extra("expires_in"), 1)

	tools, err := e.mcpTools(conf.Client(ctx, tok))
	require.NoError(t, err, "the access token works on /mcp: initialize and tools/list")
	require.Contains(t, tools, "greet")
	require.Equal(t, http.StatusUnauthorized, status(t, "GET", e.url+"/api/workflows", tok.AccessToken),
		"an access token's audience is /mcp only")

	_, err = conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	require.Equal(t, "invalid_grant", retrieveError(t, err), "a code works once")
	_, err = e.mcpTools(bearerClient(tok.AccessToken))
	require.Error(t, err, "a reused code revokes the tokens the first exchange got")

	// A fresh grant, then rotation.
	code = e.authorize(conf, verifier, e.admin)
	tok, err = conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	first := tok.RefreshToken
	rotated, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: first}).Token()
	require.NoError(t, err)
	require.NotEqual(t, first, rotated.RefreshToken, "every refresh gives a new refresh token")
	require.NotEqual(t, tok.AccessToken, rotated.AccessToken)
	tools, err = e.mcpTools(bearerClient(rotated.AccessToken))
	require.NoError(t, err)
	require.Contains(t, tools, "greet")
	require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", tok.AccessToken),
		"the new access token replaces the grant's older one")

	_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: first}).Token()
	require.Equal(t, "invalid_grant", retrieveError(t, err), "a rotated-away refresh token is refused")
	_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: rotated.RefreshToken}).Token()
	require.Equal(t, "invalid_grant", retrieveError(t, err), "its reuse revoked the grant: the newest refresh token too")
	for _, access := range []string{tok.AccessToken, rotated.AccessToken} {
		require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", access), "every access token of the grant is revoked")
	}
	grants := e.grants(e.admin)
	require.Empty(t, grants)
}

// grants lists the grants token may see.
func (e *env) grants(token string) []map[string]any {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.url+"/api/oauth/grants", nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	var out struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Data
}

func (e *env) register(body string) (int, map[string]any) {
	e.t.Helper()
	resp, err := http.Post(e.url+oauth.RegisterPath, "application/json", strings.NewReader(body))
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.NoError(e.t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

// TestFlowWithDynamicRegistration registers a client (RFC 7591), narrows the scopes on the
// page, revokes with RFC 7009, and manages grants over the REST API.
func TestFlowWithDynamicRegistration(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	st, reg := e.register(`{"client_name":"Old Client","redirect_uris":["` + redirectURI + `"],"token_endpoint_auth_method":"client_secret_post"}`)
	require.Equal(t, http.StatusCreated, st, reg)
	require.Equal(t, "none", reg["token_endpoint_auth_method"], "every client is public")
	clientID := reg["client_id"].(string)

	// A person with a runs:* token approves, unticking runs:read.
	_, person, err := e.auth.Issue(ctx, auth.IssueParams{Name: "alice", Scopes: mustScopes(t, "runs:write runs:read")})
	require.NoError(t, err)
	conf := e.config(clientID, "runs:write", "runs:read")
	verifier := oauth2.GenerateVerifier()
	tok, err := conf.Exchange(ctx, e.authorize(conf, verifier, person, "runs:write"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	require.Equal(t, "runs:write", tok.Extra("scope"), "the person narrowed the scopes")
	tools, err := e.mcpTools(bearerClient(tok.AccessToken))
	require.NoError(t, err)
	require.Contains(t, tools, "greet")

	mine := e.grants(person)
	require.Len(t, mine, 1)
	require.Equal(t, "Old Client", mine[0]["clientName"])
	require.Equal(t, []any{"runs:write"}, mine[0]["scopes"])
	require.Len(t, e.grants(e.admin), 1, "an admin sees every grant")
	_, other, err := e.auth.Issue(ctx, auth.IssueParams{Name: "bob", Scopes: mustScopes(t, "runs:read")})
	require.NoError(t, err)
	require.Empty(t, e.grants(other), "another principal sees none")
	grantURL := e.url + "/api/oauth/grants/" + mine[0]["id"].(string)
	require.Equal(t, http.StatusNotFound, status(t, "DELETE", grantURL, other), "another's grant reads as unknown")
	require.Equal(t, http.StatusNoContent, status(t, "DELETE", grantURL, person), "the approving principal revokes it")
	require.Equal(t, http.StatusNotFound, status(t, "DELETE", grantURL, person))
	require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", tok.AccessToken))

	// RFC 7009: revoking the refresh token revokes the grant; unknown tokens are fine.
	tok, err = conf.Exchange(ctx, e.authorize(conf, verifier, person, "runs:write"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	st, body := e.postForm(oauth.RevokePath, url.Values{"token": {tok.RefreshToken}, "client_id": {clientID}, "token_type_hint": {"refresh_token"}})
	require.Equal(t, http.StatusOK, st, body)
	require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", tok.AccessToken))
	_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	require.Equal(t, "invalid_grant", retrieveError(t, err))
	st, _ = e.postForm(oauth.RevokePath, url.Values{"token": {"grr_unknown"}, "client_id": {clientID}})
	require.Equal(t, http.StatusOK, st)

	// Revoking an access token revokes it alone.
	tok, err = conf.Exchange(ctx, e.authorize(conf, verifier, person, "runs:write"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	st, _ = e.postForm(oauth.RevokePath, url.Values{"token": {tok.AccessToken}, "client_id": {clientID}})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", tok.AccessToken))
	_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	require.NoError(t, err, "the grant lives on")
	st, _ = e.postForm(oauth.RevokePath, url.Values{"token": {e.admin}, "client_id": {clientID}})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, http.StatusOK, status(t, "GET", e.url+"/api/workflows", e.admin),
		"/oauth/revoke never revokes a token it did not issue")
}

func mustScopes(t *testing.T, s string) auth.Scopes {
	t.Helper()
	sc, err := auth.ParseScopeList(s)
	require.NoError(t, err)
	return sc
}

// TestSignInCode signs in on the authorize page with a one-time code, as `gorunner auth
// approve` prints; the code works once.
func TestSignInCode(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	code, _, err := oauth.NewSignInCode(ctx, e.store, auth.Local(), mustScopes(t, "runs:write"), e.clock.Now())
	require.NoError(t, err)
	conf := e.config(e.documentClient("Headless"), "runs:write")
	verifier := oauth2.GenerateVerifier()
	tok, err := conf.Exchange(ctx, e.authorize(conf, verifier, strings.ToLower(code)), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	require.Equal(t, "runs:write", tok.Extra("scope"))
	grants := e.grants(e.admin)
	require.Len(t, grants, 1)
	require.Equal(t, "local", grants[0]["principal"])

	b := e.browser()
	page := e.open(b, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)))
	again := e.submit(b, page, code, "approve", "runs:write")
	require.Equal(t, http.StatusUnauthorized, again.Status, "a sign-in code works once")
	require.Contains(t, again.Body, "Sign-in failed")

	_, _, err = oauth.NewSignInCode(ctx, e.store, auth.Principal{ID: "p", Scopes: mustScopes(t, "runs:read")}, mustScopes(t, "admin"), e.clock.Now())
	require.ErrorIs(t, err, auth.ErrScopeNotHeld)

	expired, _, err := oauth.NewSignInCode(ctx, e.store, auth.Local(), mustScopes(t, "runs:write"), e.clock.Now())
	require.NoError(t, err)
	e.clock.Advance(oauth.SignInCodeTTL + 1)
	page = e.open(b, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)))
	require.Equal(t, http.StatusUnauthorized, e.submit(b, page, expired, "approve", "runs:write").Status, "an expired sign-in code is refused")
}

// TestRevokingTheApprovingToken: revoking a person's token (DELETE /api/tokens/{id})
// revokes the grants they approved with it, and their access and refresh tokens.
func TestRevokingTheApprovingToken(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	person, secret, err := e.auth.Issue(ctx, auth.IssueParams{Name: "carol", Scopes: mustScopes(t, "runs:write")})
	require.NoError(t, err)
	conf := e.config(e.documentClient("Cut Off"), "runs:write")
	verifier := oauth2.GenerateVerifier()
	tok, err := conf.Exchange(ctx, e.authorize(conf, verifier, secret), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	_, err = e.mcpTools(bearerClient(tok.AccessToken))
	require.NoError(t, err)

	require.Equal(t, http.StatusNoContent, status(t, "DELETE", e.url+"/api/tokens/"+person.ID, e.admin))
	require.Equal(t, http.StatusUnauthorized, status(t, "POST", e.url+"/mcp", tok.AccessToken))
	_, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	require.Equal(t, "invalid_grant", retrieveError(t, err))
	require.Empty(t, e.grants(e.admin))
}
