package oauth

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gorunner/gorunner/auth"
)

//go:embed authorize.html
var pageSource string

var pageTemplate = template.Must(template.New("authorize").Parse(pageSource))

// csrfCookie carries the authorize form's CSRF token: the form must send the same value,
// and SameSite=Strict keeps the cookie off requests another site starts.
const csrfCookie = "gorunner_oauth_csrf"

// authRequest is an authorization request (RFC 6749 §4.1.1 with PKCE and RFC 8707).
type authRequest struct {
	ClientID, RedirectURI, ResponseType, State, Challenge, Method, Scope, Resource string
}

// authParams are the request's parameters, also carried by the form as hidden fields.
var authParams = []string{"client_id", "redirect_uri", "response_type", "state", "code_challenge",
	"code_challenge_method", "scope", "resource"}

func readAuthRequest(q url.Values) authRequest {
	return authRequest{ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"),
		ResponseType: q.Get("response_type"), State: q.Get("state"), Challenge: q.Get("code_challenge"),
		Method: q.Get("code_challenge_method"), Scope: q.Get("scope"), Resource: q.Get("resource")}
}

func (a authRequest) values() []string {
	return []string{a.ClientID, a.RedirectURI, a.ResponseType, a.State, a.Challenge, a.Method, a.Scope, a.Resource}
}

// checkedRequest is an authorization request whose client and redirect URI are verified.
// Verified is not trusted: anyone can publish a metadata document or register a client
// naming any redirect URI, so an error found before the person saw the consent page
// (which names the redirect host) is shown, never redirected (RFC 9700 §4.11.2).
type checkedRequest struct {
	authRequest
	client *clientInfo
	scopes auth.Scopes // as asked, or DefaultScope
}

// checkClient verifies the client and the redirect URI (exact match). Its error is shown
// on a page, never sent to an unverified redirect URI.
func (s *Server) checkClient(ctx context.Context, q url.Values) (*checkedRequest, error) {
	for _, p := range []string{"client_id", "redirect_uri"} {
		if len(q[p]) > 1 {
			return nil, clientErrorf("the request repeats %s", p)
		}
	}
	a := readAuthRequest(q)
	c, err := s.resolveClient(ctx, a.ClientID)
	if err != nil {
		return nil, err
	}
	if err := s.recheckRegistered(c); err != nil {
		return nil, err
	}
	switch {
	case a.RedirectURI == "" && len(c.RedirectURIs) == 1:
		a.RedirectURI = c.RedirectURIs[0]
	case a.RedirectURI == "":
		return nil, clientErrorf("the request names no redirect_uri, and the client has several")
	case !slices.Contains(c.RedirectURIs, a.RedirectURI):
		return nil, clientErrorf("redirect_uri %q is not one of the client's redirect URIs", a.RedirectURI)
	}
	return &checkedRequest{authRequest: a, client: c}, nil
}

// recheckRegistered refuses a registered client whose metadata registration refuses now
// (a client registered before GoRunner refused lookalike redirect hosts and names that
// reorder the consent page): no consent page names it, and so it gets no new grant; its
// grants made before still refresh. A metadata document is checked each time it is
// fetched.
func (s *Server) recheckRegistered(c *clientInfo) error {
	if c.document {
		return nil
	}
	doc := clientDocument{ClientName: c.Name, RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes}
	if _, err := s.checkMetadata(doc, c.Name, c.GrantTypes); err != nil {
		return clientErrorf("client %q was registered with metadata GoRunner now refuses (%v): register it again", c.ID, err)
	}
	return nil
}

// checkRequest checks the rest of the request (RFC 6749 §4.1.2.1 errors).
func (s *Server) checkRequest(q url.Values, cr *checkedRequest) *oauthError {
	for _, p := range authParams {
		if len(q[p]) > 1 {
			return newError(errInvalidRequest, "the request repeats "+p)
		}
	}
	switch {
	case cr.ResponseType == "":
		return newError(errInvalidRequest, "response_type is required")
	case cr.ResponseType != "code":
		return newError(errUnsupportedResponseType, "only response_type=code is supported")
	case !cr.client.allows(grantAuthorizationCode):
		return newError(errUnauthorizedClient, "the client may not use the authorization code grant")
	case cr.Challenge == "":
		return newError(errInvalidRequest, "code_challenge is required (PKCE with S256)")
	case cr.Method != "S256":
		return newError(errInvalidRequest, "code_challenge_method must be S256; plain is refused")
	case !validChallenge(cr.Challenge):
		return newError(errInvalidRequest, "code_challenge must be the base64url SHA-256 of the verifier (43 characters)")
	case cr.Resource != "" && cr.Resource != s.resource:
		return newError(errInvalidTarget, "resource must be "+s.resource)
	}
	scope := cr.Scope
	if strings.TrimSpace(scope) == "" {
		scope = DefaultScope
	}
	scopes, err := auth.ParseScopeList(scope)
	if err != nil {
		return newError(errInvalidScope, err.Error())
	}
	cr.scopes = scopes
	return nil
}

func validChallenge(c string) bool {
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == 32
}

// authorize serves the authorize page (GET) and takes its form (POST).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	switch r.Method {
	case http.MethodGet:
		s.showAuthorize(w, r)
	case http.MethodPost:
		s.submitAuthorize(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		s.fatal(w, http.StatusMethodNotAllowed, "use GET or POST")
	}
}

func (s *Server) showAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cr, err := s.checkClient(r.Context(), q)
	if err != nil {
		s.clientFailure(w, r, err)
		return
	}
	if e := s.checkRequest(q, cr); e != nil {
		s.requestFailure(w, e)
		return
	}
	csrf, err := secret("")
	if err != nil {
		s.fatal(w, http.StatusInternalServerError, "the server could not complete the request")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: csrf, Path: AuthorizePath, HttpOnly: true,
		Secure: strings.HasPrefix(s.issuer, "https://"), SameSite: http.SameSiteStrictMode, MaxAge: 3600})
	s.render(w, http.StatusOK, s.consentPage(cr, csrf, nil, ""))
}

func (s *Server) submitAuthorize(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.fatal(w, http.StatusBadRequest, "the form could not be read")
		return
	}
	cookie, err := r.Cookie(csrfCookie)
	form := r.PostForm
	if err != nil || cookie.Value == "" || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(form.Get("csrf"))) != 1 {
		s.fatal(w, http.StatusForbidden, "the form expired or was not sent from this page (cookies must be on); start again from the application")
		return
	}
	cr, err := s.checkClient(r.Context(), form)
	if err != nil {
		s.clientFailure(w, r, err)
		return
	}
	if e := s.checkRequest(form, cr); e != nil {
		s.requestFailure(w, e)
		return
	}
	if form.Get("action") != "approve" {
		s.redirectError(w, r, cr, newError(errAccessDenied, "the person denied the request"))
		return
	}
	chosen := form["grant_scope"]
	code, problem, err := s.approve(r.Context(), cr, chosen, form.Get("credential"))
	if err != nil {
		s.log.ErrorContext(r.Context(), "approving an authorization request failed", "error", err)
		s.redirectError(w, r, cr, newError(errServerError, "the server could not complete the request"))
		return
	}
	if problem != "" {
		status := http.StatusBadRequest
		if problem == signInFailed {
			status = http.StatusUnauthorized
		}
		s.render(w, status, s.consentPage(cr, form.Get("csrf"), chosen, problem))
		return
	}
	s.redirect(w, r, cr, url.Values{"code": {code}})
}

// signInFailed is the one message for every failed sign-in, so that it tells nothing
// about which credentials exist.
const signInFailed = "Sign-in failed: the token or one-time code is not valid (a one-time code works once)."

// approve signs the person in and makes the authorization code for the scopes chosen. A
// problem the person can fix comes back as text for the page.
func (s *Server) approve(ctx context.Context, cr *checkedRequest, chosen []string, credential string) (code, problem string, err error) {
	var scopes auth.Scopes
	for _, c := range chosen {
		sc, err := auth.ParseScope(c)
		if err != nil || !slices.Contains(cr.scopes, sc) {
			return "", fmt.Sprintf("Scope %q was not asked for.", c), nil
		}
		scopes = append(scopes, sc)
	}
	if len(scopes) == 0 {
		return "", "Choose at least one scope, or deny.", nil
	}
	p, err := s.signIn(ctx, strings.TrimSpace(credential))
	if errors.Is(err, auth.ErrUnauthorized) {
		return "", signInFailed, nil
	}
	if err != nil {
		return "", "", err
	}
	if !p.Scopes.Covers(scopes) {
		return "", fmt.Sprintf("Your sign-in holds %q, which does not cover %q: untick what it does not hold.", p.Scopes.String(), scopes.String()), nil
	}
	code, err = secret("")
	if err != nil {
		return "", "", err
	}
	err = s.store.CreateCode(ctx, &Code{Hash: hash(code), ClientID: cr.client.ID, ClientName: cr.client.Name,
		RedirectURI: cr.RedirectURI, Challenge: cr.Challenge, Scope: scopes.String(), PrincipalID: p.ID,
		PrincipalName: p.Name, ExpiresAt: s.cfg.Now().Add(CodeTTL)})
	if err != nil {
		return "", "", fmt.Errorf("storing the authorization code: %w", err)
	}
	return code, "", nil
}

// signIn resolves a token, or a one-time sign-in code, to the principal it stands for.
// Tokens limited to an audience (OAuth access tokens) cannot approve grants.
func (s *Server) signIn(ctx context.Context, credential string) (auth.Principal, error) {
	if credential == "" {
		return auth.Principal{}, auth.ErrUnauthorized
	}
	if strings.HasPrefix(credential, auth.TokenPrefix) {
		p, err := s.tokens.Authenticate(ctx, credential)
		if err == nil && p.Audience != "" {
			err = auth.ErrUnauthorized
		}
		return p, err
	}
	c, err := s.store.TakeSignInCode(ctx, hash(normalizeSignInCode(credential)))
	if errors.Is(err, ErrNotFound) || (err == nil && !s.cfg.Now().Before(c.ExpiresAt)) {
		return auth.Principal{}, auth.ErrUnauthorized
	}
	if err != nil {
		return auth.Principal{}, err
	}
	scopes, err := auth.ParseScopeList(c.Scope)
	if err != nil {
		return auth.Principal{}, fmt.Errorf("reading a sign-in code's scopes: %w", err)
	}
	return auth.Principal{ID: c.PrincipalID, Name: c.PrincipalName, Scopes: scopes}, nil
}

// redirect sends the person back to the verified redirect URI with params, state and iss
// (RFC 9207).
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, cr *checkedRequest, params url.Values) {
	params.Set("state", cr.State)
	params.Set("iss", s.issuer)
	http.Redirect(w, r, withQuery(cr.RedirectURI, params), http.StatusSeeOther)
}

func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, cr *checkedRequest, e *oauthError) {
	s.redirect(w, r, cr, url.Values{"error": {e.Code}, "error_description": {e.Description}})
}

// requestFailure shows an invalid authorization request's error on a page: sending it to
// the redirect URI unasked would make the authorize endpoint an open redirector to any
// URI a self-described client names.
func (s *Server) requestFailure(w http.ResponseWriter, e *oauthError) {
	s.fatal(w, http.StatusBadRequest, "The application's request is not valid ("+e.Code+"): "+e.Description+".")
}

// clientFailure shows why the client or its redirect URI cannot be used.
func (s *Server) clientFailure(w http.ResponseWriter, r *http.Request, err error) {
	var ce *errClient
	var busy *fetchesBusyError
	switch {
	case errors.As(err, &ce):
		s.fatal(w, http.StatusBadRequest, ce.msg)
		return
	case errors.As(err, &busy):
		setRetryAfter(w, busy.retryAfter)
		s.fatal(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	s.log.ErrorContext(r.Context(), "resolving an OAuth client failed", "error", err)
	s.fatal(w, http.StatusInternalServerError, "the server could not complete the request")
}

// page is what the authorize template shows.
type page struct {
	Fatal                              string
	ClientName, ClientID, RedirectHost string
	Action, CSRF, Error                string
	Hidden                             []hiddenField
	Scopes                             []scopeOption
}

type hiddenField struct{ Name, Value string }

type scopeOption struct {
	Value, Description string
	Checked            bool
}

var scopeDescriptions = map[auth.Permission]string{
	auth.Admin:          "everything, including tokens",
	auth.WorkflowsWrite: "create, change, publish and delete workflows and connections",
	auth.RunsWrite:      "call tools: start, cancel and rerun runs, resume hooks",
	auth.RunsRead:       "read workflows, runs and hooks",
}

func (s *Server) consentPage(cr *checkedRequest, csrf string, chosen []string, problem string) page {
	host := cr.RedirectURI
	if u, err := url.Parse(cr.RedirectURI); err == nil && u.Host != "" {
		host = u.Host
	} else if err == nil {
		host = u.Scheme + ":"
	}
	p := page{ClientName: cr.client.Name, ClientID: cr.client.ID, RedirectHost: host, Action: AuthorizePath,
		CSRF: csrf, Error: problem}
	for i, name := range authParams {
		p.Hidden = append(p.Hidden, hiddenField{Name: name, Value: cr.values()[i]})
	}
	for _, sc := range cr.scopes {
		desc := scopeDescriptions[sc.Permission]
		if sc.Workflow != "" || sc.Tag != "" {
			desc += " — only " + strings.TrimPrefix(sc.String(), string(sc.Permission)+":")
		}
		p.Scopes = append(p.Scopes, scopeOption{Value: sc.String(), Description: desc,
			Checked: chosen == nil || slices.Contains(chosen, sc.String())})
	}
	return p
}

func (s *Server) fatal(w http.ResponseWriter, status int, msg string) {
	s.render(w, status, page{Fatal: msg})
}

func (s *Server) render(w http.ResponseWriter, status int, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.page.Execute(w, p); err != nil {
		s.log.Error("rendering the authorize page failed", "error", err)
	}
}
