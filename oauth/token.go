package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/gorunner/gorunner/auth"
)

// RefreshPrefix starts every refresh token.
const RefreshPrefix = "grr_"

// verifierRE is a PKCE code_verifier (RFC 7636 §4.1).
var verifierRE = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// tokenResponse is RFC 6749 §5.1.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// readForm reads an application/x-www-form-urlencoded POST body of at most MaxFormBytes
// and refuses repeated parameters (RFC 6749 §3.2).
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	if r.Method != http.MethodPost {
		return nil, postOnly()
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, newError(errInvalidRequest, "the body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		return nil, newError(errInvalidRequest, fmt.Sprintf("the form could not be read (at most %d bytes)", MaxFormBytes))
	}
	for k, vs := range r.PostForm {
		if len(vs) > 1 {
			return nil, newError(errInvalidRequest, "the request repeats "+k)
		}
	}
	return r.PostForm, nil
}

// clientOf is the client_id of a request to the token or revoke endpoint: in the form,
// or as the user name of HTTP Basic authentication (clients that always send it; the
// password is ignored, every client is public). Both, and different → invalid_request.
func clientOf(r *http.Request, form url.Values) (string, *oauthError) {
	id := form.Get("client_id")
	if user, _, ok := r.BasicAuth(); ok {
		user, err := url.QueryUnescape(user)
		if err != nil || (id != "" && user != id) {
			return "", newError(errInvalidRequest, "client_id in the form and in the Authorization header differ")
		}
		id = user
	}
	if id == "" {
		return "", newError(errInvalidRequest, "client_id is required")
	}
	return id, nil
}

// tokenClient resolves the client_id of a token request: a registered client, or the
// (cached) metadata document of a URL client_id. One that names no usable client →
// invalid_client.
func (s *Server) tokenClient(ctx context.Context, r *http.Request, id string) (*clientInfo, *oauthError) {
	c, err := s.resolveClient(ctx, id)
	var ce *errClient
	var busy *fetchesBusyError
	switch {
	case errors.As(err, &ce):
		e := newError(errInvalidClient, ce.msg)
		if _, _, ok := r.BasicAuth(); ok {
			e.status = http.StatusUnauthorized
		}
		return nil, e
	case errors.As(err, &busy):
		e := newError(errTemporarilyUnavailable, err.Error())
		e.retryAfter = busy.retryAfter
		return nil, e
	case err != nil:
		return nil, internal(err)
	}
	return c, nil
}

// token is the token endpoint: authorization_code (with PKCE) and refresh_token grants.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	resp, e := s.grant(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) grant(w http.ResponseWriter, r *http.Request) (*tokenResponse, *oauthError) {
	form, e := readForm(w, r)
	if e != nil {
		return nil, e
	}
	grantType := form.Get("grant_type")
	if grantType == "" {
		return nil, newError(errInvalidRequest, "grant_type is required")
	}
	if grantType != grantAuthorizationCode && grantType != grantRefreshToken {
		return nil, newError(errUnsupportedGrantType, "grant_type must be authorization_code or refresh_token")
	}
	clientID, e := clientOf(r, form)
	if e != nil {
		return nil, e
	}
	client, e := s.tokenClient(r.Context(), r, clientID)
	if e != nil {
		return nil, e
	}
	if !client.allows(grantType) {
		return nil, newError(errUnauthorizedClient, "the client did not register the "+grantType+" grant")
	}
	if res := form.Get("resource"); res != "" && res != s.resource {
		return nil, newError(errInvalidTarget, "resource must be "+s.resource)
	}
	s.sweepIfDue(r.Context())
	if grantType == grantAuthorizationCode {
		return s.exchange(r.Context(), form, client)
	}
	return s.refresh(r.Context(), form, clientID)
}

// approverTTL checks that the token that approved a grant still lives, and answers how
// long an access token issued under the grant may: AccessTTL, cut to that token's end. A
// grant outlives neither the revocation nor the expiry of its approver's token. Grants
// approved with a one-time sign-in code belong to the local principal, which has no token.
func (s *Server) approverTTL(ctx context.Context, principalID string) (time.Duration, *oauthError) {
	ttl, err := auth.WithinToken(ctx, s.tokens, principalID, AccessTTL, s.cfg.Now())
	switch {
	case errors.Is(err, auth.ErrUnauthorized):
		return 0, newError(errInvalidGrant, "the token that approved the grant was revoked or has expired")
	case err != nil:
		return 0, internal(err)
	}
	return ttl, nil
}

// exchange trades an authorization code for tokens. The code is used up by the first
// attempt, right or wrong; a second attempt revokes what the first one got, also when the
// first is still under way: the replay deletes the code, and a grant is stored only while
// its code is there (Store.CreateGrant).
func (s *Server) exchange(ctx context.Context, form url.Values, client *clientInfo) (*tokenResponse, *oauthError) {
	code, verifier := form.Get("code"), form.Get("code_verifier")
	switch {
	case code == "":
		return nil, newError(errInvalidRequest, "code is required")
	case verifier == "":
		return nil, newError(errInvalidRequest, "code_verifier is required (PKCE)")
	case !verifierRE.MatchString(verifier):
		return nil, newError(errInvalidRequest, "code_verifier must be 43 to 128 unreserved characters")
	}
	grantID := newID()
	c, e := s.useCode(ctx, code, grantID)
	if e != nil {
		return nil, e
	}
	if e := s.checkCode(c, form, client.ID, verifier); e != nil {
		return nil, e
	}
	ttl, e := s.approverTTL(ctx, c.PrincipalID)
	if e != nil {
		return nil, e
	}
	scopes, err := auth.ParseScopeList(c.Scope)
	if err != nil {
		return nil, internal(fmt.Errorf("reading a code's scopes: %w", err))
	}
	access, tok, err := s.issueAccess(ctx, c.ClientName, scopes, ttl)
	if err != nil {
		return nil, internal(err)
	}
	refresh, e := s.createGrant(ctx, c, grantID, tok.ID, hash(code))
	if e != nil {
		return nil, e
	}
	if !client.allows(grantRefreshToken) {
		refresh = "" // the grant keeps a refresh token nobody holds
	}
	return s.tokenResponse(access, refresh, scopes, ttl), nil
}

// useCode marks a code used by grantID; a code used before revokes the grant of its
// first use.
func (s *Server) useCode(ctx context.Context, code, grantID string) (*Code, *oauthError) {
	c, err := s.store.ExchangeCode(ctx, hash(code), grantID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, newError(errInvalidGrant, "the authorization code is not valid")
	case errors.Is(err, ErrCodeUsed):
		if rerr := s.revokeGrant(ctx, c.GrantID); rerr != nil && !errors.Is(rerr, ErrNotFound) {
			return nil, internal(rerr)
		}
		return nil, errCodeReplayed
	case err != nil:
		return nil, internal(err)
	}
	return c, nil
}

// errCodeReplayed answers the reuse of an authorization code.
var errCodeReplayed = newError(errInvalidGrant, "the authorization code was already used; the tokens it gave are revoked")

// checkCode checks an exchanged code against the request (RFC 6749 §4.1.3, RFC 7636 §4.6).
func (s *Server) checkCode(c *Code, form url.Values, clientID, verifier string) *oauthError {
	sum := sha256.Sum256([]byte(verifier))
	switch {
	case !s.cfg.Now().Before(c.ExpiresAt):
		return newError(errInvalidGrant, "the authorization code expired")
	case c.ClientID != clientID:
		return newError(errInvalidGrant, "the authorization code was issued to another client")
	case form.Has("redirect_uri") && form.Get("redirect_uri") != c.RedirectURI:
		return newError(errInvalidGrant, "redirect_uri differs from the authorization request's")
	case subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.Challenge)) != 1:
		return newError(errInvalidGrant, "code_verifier does not match the code_challenge")
	}
	return nil
}

// createGrant stores the grant of an exchanged code, holding access token tokenID, and
// returns its refresh token. The access token is revoked when the grant cannot be stored
// (the code was replayed meanwhile), and the grant when its approver's token went while
// it was made: RevokeToken deletes the token before it lists the grants, so it either
// sees this grant or is seen here.
func (s *Server) createGrant(ctx context.Context, c *Code, grantID, tokenID string, code []byte) (string, *oauthError) {
	refresh, err := secret(RefreshPrefix)
	if err != nil {
		return "", internal(errors.Join(err, s.tokens.Revoke(ctx, tokenID)))
	}
	now := s.cfg.Now().UTC()
	g := &Grant{ID: grantID, ClientID: c.ClientID, ClientName: c.ClientName, PrincipalID: c.PrincipalID,
		PrincipalName: c.PrincipalName, Scope: c.Scope, CreatedAt: now, RefreshHash: hash(refresh),
		RefreshExpiresAt: now.Add(RefreshTTL), TokenIDs: []string{tokenID}, Issued: 1, Code: code}
	if err := s.store.CreateGrant(ctx, g); err != nil {
		rerr := s.revokeTokens(ctx, []string{tokenID})
		if errors.Is(err, ErrCodeUsed) && rerr == nil {
			return "", errCodeReplayed
		}
		return "", internal(errors.Join(err, rerr))
	}
	if _, e := s.approverTTL(ctx, c.PrincipalID); e != nil {
		if err := s.revokeGrant(ctx, grantID); err != nil && !errors.Is(err, ErrNotFound) {
			return "", internal(err)
		}
		return "", e
	}
	return refresh, nil
}

// refresh rotates a refresh token: a new access token and a new refresh token. A refresh
// token used before (stolen, or replayed) revokes the whole grant.
func (s *Server) refresh(ctx context.Context, form url.Values, clientID string) (*tokenResponse, *oauthError) {
	old := form.Get("refresh_token")
	if old == "" {
		return nil, newError(errInvalidRequest, "refresh_token is required")
	}
	g, e := s.refreshedGrant(ctx, old, clientID)
	if e != nil {
		return nil, e
	}
	scopes, e := narrow(g.Scope, form.Get("scope"))
	if e != nil {
		return nil, e
	}
	ttl, e := s.grantApproverTTL(ctx, g)
	if e != nil {
		return nil, e
	}
	access, tok, err := s.issueAccess(ctx, g.ClientName, scopes, ttl)
	if err != nil {
		return nil, internal(err)
	}
	next, err := secret(RefreshPrefix)
	if err != nil {
		return nil, internal(err)
	}
	_, err = s.store.RotateRefresh(ctx, RotateParams{Old: hash(old), New: hash(next),
		ExpiresAt: s.cfg.Now().UTC().Add(RefreshTTL), TokenID: tok.ID})
	if err != nil {
		if rerr := s.revokeTokens(ctx, []string{tok.ID}); rerr != nil {
			s.log.ErrorContext(ctx, "revoking an access token not handed out failed", "error", rerr)
		}
		switch {
		case errors.Is(err, ErrRefreshReused):
			return nil, s.reused(ctx, g.ID)
		case errors.Is(err, ErrNotFound):
			return nil, newError(errInvalidGrant, "the refresh token is not valid")
		}
		return nil, internal(err)
	}
	// The new access token replaces the grant's older ones; they would expire within
	// AccessTTL anyway, so a failure here is only logged.
	if err := s.revokeTokens(ctx, g.TokenIDs); err != nil {
		s.log.ErrorContext(ctx, "revoking replaced access tokens failed", "grant", g.ID, "error", err)
	}
	return s.tokenResponse(access, next, scopes, ttl), nil
}

// refreshedGrant is the grant whose current refresh token old is, issued to clientID.
func (s *Server) refreshedGrant(ctx context.Context, old, clientID string) (*Grant, *oauthError) {
	g, err := s.store.GrantByRefresh(ctx, hash(old))
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, newError(errInvalidGrant, "the refresh token is not valid")
	case err != nil:
		return nil, internal(err)
	case g.ClientID != clientID:
		return nil, newError(errInvalidGrant, "the refresh token was issued to another client")
	case subtle.ConstantTimeCompare(g.RefreshHash, hash(old)) != 1:
		return nil, s.reused(ctx, g.ID)
	case !s.cfg.Now().Before(g.RefreshExpiresAt):
		return nil, newError(errInvalidGrant, "the refresh token expired")
	}
	return g, nil
}

// grantApproverTTL is approverTTL for a grant being refreshed: a grant whose approver's
// token is gone is dead, and revoked.
func (s *Server) grantApproverTTL(ctx context.Context, g *Grant) (time.Duration, *oauthError) {
	ttl, e := s.approverTTL(ctx, g.PrincipalID)
	if e != nil && e.Code == errInvalidGrant {
		if err := s.revokeGrant(ctx, g.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return 0, internal(err)
		}
	}
	return ttl, e
}

// reused revokes a grant whose old refresh token came back.
func (s *Server) reused(ctx context.Context, grantID string) *oauthError {
	if err := s.revokeGrant(ctx, grantID); err != nil && !errors.Is(err, ErrNotFound) {
		return internal(err)
	}
	s.log.WarnContext(ctx, "a rotated-away refresh token was used: grant revoked", "grant", grantID)
	return newError(errInvalidGrant, "the refresh token was already used; the grant is revoked")
}

// narrow is the grant's scopes, or the subset a refresh request asks for (RFC 6749 §6).
func narrow(granted, asked string) (auth.Scopes, *oauthError) {
	held, err := auth.ParseScopeList(granted)
	if err != nil {
		return nil, internal(fmt.Errorf("reading a grant's scopes: %w", err))
	}
	if strings.TrimSpace(asked) == "" {
		return held, nil
	}
	want, err := auth.ParseScopeList(asked)
	if err != nil {
		return nil, newError(errInvalidScope, err.Error())
	}
	if !held.Covers(want) {
		return nil, newError(errInvalidScope, fmt.Sprintf("the grant holds %q, not %q", held.String(), want.String()))
	}
	return want, nil
}

// issueAccess mints an access token: a GoRunner token for /mcp only, for ttl.
func (s *Server) issueAccess(ctx context.Context, clientName string, scopes auth.Scopes, ttl time.Duration) (string, *auth.Token, error) {
	name := "oauth: " + clientName
	if len(name) > 100 {
		name = name[:100]
	}
	tok, secret, err := s.tokens.Issue(ctx, auth.IssueParams{Name: strings.ToValidUTF8(name, ""), Scopes: scopes,
		ExpiresIn: ttl, Audience: auth.AudienceMCP})
	if err != nil {
		return "", nil, fmt.Errorf("issuing an access token: %w", err)
	}
	return secret, tok, nil
}

func (s *Server) tokenResponse(access, refresh string, scopes auth.Scopes, ttl time.Duration) *tokenResponse {
	return &tokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(ttl.Seconds()),
		RefreshToken: refresh, Scope: scopes.String()}
}

// revoke is RFC 7009: a refresh token revokes its grant (every token of it); an access
// token issued by this server is revoked alone. Only the client a token was issued to
// revokes it: another client's token, like an unknown one, is answered 200 and left be.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if e := s.revokeToken(w, r); e != nil {
		s.writeError(w, r, e)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) *oauthError {
	form, e := readForm(w, r)
	if e != nil {
		return e
	}
	token := form.Get("token")
	if token == "" {
		return newError(errInvalidRequest, "token is required")
	}
	clientID, e := clientOf(r, form)
	if e != nil {
		return e
	}
	g, accessID, err := s.grantOfToken(r.Context(), token)
	switch {
	case errors.Is(err, ErrNotFound) || (err == nil && g.ClientID != clientID):
		return nil
	case err != nil:
		return internal(err)
	case accessID != "":
		err = s.tokens.Revoke(r.Context(), accessID)
	default:
		err = s.revokeGrant(r.Context(), g.ID)
	}
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, auth.ErrNotFound) {
		return internal(err)
	}
	return nil
}

// grantOfToken finds the grant an access or refresh token belongs to, and the access
// token's ID; ErrNotFound for a token this server did not issue or no longer holds.
func (s *Server) grantOfToken(ctx context.Context, token string) (*Grant, string, error) {
	if !strings.HasPrefix(token, auth.TokenPrefix) {
		g, err := s.store.GrantByRefresh(ctx, hash(token))
		return g, "", err
	}
	p, err := s.tokens.Authenticate(ctx, token)
	if err != nil || p.Audience != auth.AudienceMCP {
		return nil, "", ErrNotFound // unknown, expired, or not one this server issued
	}
	g, err := s.store.GrantByToken(ctx, p.ID)
	return g, p.ID, err
}
