package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gorunner/gorunner/internal/safetext"
	"github.com/gorunner/gorunner/runner"
)

// Limits on clients (docs/security.md, "OAuth for remote assistants").
const (
	// ClientDocumentTimeout bounds fetching a Client ID Metadata Document.
	ClientDocumentTimeout = 5 * time.Second
	// DefaultMaxClientDocumentFetches bounds the Client ID Metadata Documents one server
	// fetches at once; past it an authorize or token request needing another is refused
	// with 503 and Retry-After. A few clients connect at a time; eight leaves room for
	// them while bounding what unauthenticated requests can make GoRunner fetch.
	DefaultMaxClientDocumentFetches = 8
	// DefaultClientDocumentFetchesPerSecond bounds how fast one server starts fetching
	// Client ID Metadata Documents it has not cached (a cached document or failure costs
	// nothing); past it an authorize or token request needing another fetch is refused
	// with 503 and Retry-After. The bound on fetches at once alone lets anyone make
	// GoRunner GET as many distinct URLs a second as answer quickly; people connecting
	// assistants need a handful.
	DefaultClientDocumentFetchesPerSecond = 10
	// DefaultClientDocumentFetchBurst is how many uncached fetches may start back to back
	// after a quiet spell, before DefaultClientDocumentFetchesPerSecond paces them.
	DefaultClientDocumentFetchBurst = 20
	// MaxClientDocumentBytes bounds a Client ID Metadata Document.
	MaxClientDocumentBytes = 64 << 10
	// MaxRegistrationBytes bounds a dynamic registration request.
	MaxRegistrationBytes = 16 << 10
	// MaxRedirectURIs bounds the redirect URIs of one client.
	MaxRedirectURIs = 10
	// MaxRedirectURIBytes bounds one redirect URI (and a client_id URL).
	MaxRedirectURIBytes = 2000
	// MaxClientNameBytes bounds a client's name.
	MaxClientNameBytes = 200
	// DefaultRegistrationsPerMinute is how many dynamic registrations one client address
	// may make per minute.
	DefaultRegistrationsPerMinute = 10
	// DefaultMaxClients bounds the dynamically registered clients kept at once: past it,
	// registration answers 503 until the sweep deletes unused ones.
	DefaultMaxClients = 10000
	// UnusedClientTTL is how long a dynamically registered client is kept without a grant:
	// the sweep deletes clients registered longer ago that hold none.
	UnusedClientTTL = 24 * time.Hour
)

const (
	grantAuthorizationCode = "authorization_code"
	grantRefreshToken      = "refresh_token"
)

// errClient is why a client cannot be used: its text is shown to the person (the
// authorize page) or sent as error_description.
// redirect marks a problem with the redirect URIs (RFC 7591's invalid_redirect_uri).
type errClient struct {
	msg      string
	redirect bool
}

func (e *errClient) Error() string { return e.msg }

func clientErrorf(format string, args ...any) error {
	return &errClient{msg: fmt.Sprintf(format, args...)}
}

func redirectErrorf(format string, args ...any) error {
	return &errClient{msg: fmt.Sprintf(format, args...), redirect: true}
}

// clientInfo is a client as resolved: registered, or described by its metadata document.
type clientInfo struct {
	Client
	document bool // identified by a Client ID Metadata Document
}

func (c *Client) allows(grantType string) bool { return slices.Contains(c.GrantTypes, grantType) }

// isDocumentID reports whether a client_id is a URL, naming a metadata document.
func isDocumentID(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// resolveClient finds a client by its client_id: it fetches (or takes from the cache) the
// metadata document of a URL client_id, or looks a registered client up. An unusable client is an *errClient.
func (s *Server) resolveClient(ctx context.Context, id string) (*clientInfo, error) {
	if id == "" {
		return nil, clientErrorf("the request names no client_id")
	}
	if isDocumentID(id) {
		return s.fetchClientDocument(ctx, id)
	}
	c, err := s.store.ClientByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, clientErrorf("client %q is not registered", id)
	}
	if err != nil {
		return nil, err
	}
	return &clientInfo{Client: *c}, nil
}

// checkDocumentID checks a client_id URL as Client ID Metadata Documents require: https
// (or http on loopback when serving on loopback), a path, no fragment, credentials or
// dot segments.
func (s *Server) checkDocumentID(id string) (*url.URL, error) {
	u, err := url.Parse(id)
	switch {
	case err != nil || len(id) > MaxRedirectURIBytes || !asciiURI(id) || !asciiURI(u.Host):
		return nil, clientErrorf("client_id %q is not a valid URL (an ASCII URI)", id)
	case u.Scheme == "http" && !(s.loopback && isLoopbackHost(u.Hostname())):
		return nil, clientErrorf("client_id %q must be an https URL (http is allowed only on loopback when GoRunner serves on loopback)", id)
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, clientErrorf("client_id %q must be an https URL", id)
	case u.Fragment != "" || u.User != nil || u.Host == "":
		return nil, clientErrorf("client_id %q must have a host and no fragment or credentials", id)
	case u.Path == "" || u.Path == "/" || path.Clean(u.Path) != u.Path:
		return nil, clientErrorf("client_id %q must have a path without dot segments", id)
	}
	return u, nil
}

// clientDocument is the part of a Client ID Metadata Document (or of an RFC 7591
// registration request) GoRunner reads.
type clientDocument struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// fetchesBusyError refuses a client_id URL while MaxClientDocumentFetches documents are
// being fetched, or while ClientDocumentFetchesPerSecond are spent: anyone may send
// authorize requests, and each uncached URL would cost a fetch held up to
// ClientDocumentTimeout, so past either bound a request is refused at once rather than
// queued. retryAfter is when to try again.
type fetchesBusyError struct{ retryAfter time.Duration }

func (e *fetchesBusyError) Error() string {
	return "the server is fetching too many client metadata documents right now; try again in a moment"
}

// errFetchesBusy refuses a request past MaxClientDocumentFetches: a slot frees as soon as
// any fetch ends.
var errFetchesBusy = &fetchesBusyError{retryAfter: time.Second}

// fetchClientDocument fetches and checks the metadata document a client_id URL names, or
// takes it, or the failure fetching it ended in, from the cache (see documentTTL and
// FailedClientDocumentTTL). Requests for one document at once share one fetch, which ends
// on its own time (the fetch client's timeout) whichever of them leave; only a fetch takes
// a slot and a token of the rate bound.
func (s *Server) fetchClientDocument(ctx context.Context, id string) (*clientInfo, error) {
	u, err := s.checkDocumentID(id)
	if err != nil {
		return nil, err
	}
	if ci, err, ok := s.cachedClientDocument(id); ok {
		return ci, err
	}
	s.sharing.Add(1)
	defer s.sharing.Add(-1)
	ch := s.flight.DoChan(id, func() (any, error) {
		if ci, err, ok := s.cachedClientDocument(id); ok {
			return ci, err
		}
		return s.fetchUncached(context.WithoutCancel(ctx), u, id)
	})
	select {
	case res := <-ch:
		ci, _ := res.Val.(*clientInfo)
		return ci, res.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// cachedClientDocument is the document id names, or the failure fetching it ended in, when
// either is cached (ok).
func (s *Server) cachedClientDocument(id string) (*clientInfo, error, bool) {
	if e, ok := s.docs.get(id, s.cfg.Now()); ok {
		return &e.client, nil, true
	}
	if e, ok := s.failed.get(id, s.cfg.Now()); ok {
		return nil, e.err, true
	}
	return nil, nil, false
}

// fetchUncached fetches the document id names within MaxClientDocumentFetches and the rate
// bound, and caches what it ends in (a refusal by either bound is not cached).
func (s *Server) fetchUncached(ctx context.Context, u *url.URL, id string) (*clientInfo, error) {
	select {
	case s.fetching <- struct{}{}:
		defer func() { <-s.fetching }()
	default:
		return nil, errFetchesBusy
	}
	now := s.cfg.Now()
	if r := s.pace.ReserveN(now, 1); r.DelayFrom(now) > 0 {
		wait := r.DelayFrom(now)
		r.CancelAt(now)
		return nil, &fetchesBusyError{retryAfter: time.Duration(math.Ceil(wait.Seconds())) * time.Second}
	}
	ci, ttl, err := s.loadClientDocument(ctx, u, id)
	if err != nil {
		s.failed.putFailure(id, err, FailedClientDocumentTTL, s.cfg.Now())
		return nil, err
	}
	s.docs.put(id, ci, ttl, s.cfg.Now())
	return ci, nil
}

// loadClientDocument fetches and checks the document id names, and says how long to keep it.
func (s *Server) loadClientDocument(ctx context.Context, u *url.URL, id string) (*clientInfo, time.Duration, error) {
	doc, header, err := s.readClientDocument(ctx, id)
	if errors.Is(err, errEgressDenied) {
		// Decided before dialling, whatever listens there. Not the dialled address: the
		// page is open to anyone, and would tell what an internal name resolves to.
		return nil, 0, clientErrorf("fetching the client's metadata document %s failed: %v", id, errEgressDenied)
	}
	if err != nil {
		// Why is for the log only: whether the connection was refused, reset, timed out
		// or answered something other than the document would tell anyone who can send
		// an authorize request which ports are open where GoRunner can reach.
		s.log.InfoContext(ctx, "fetching a client metadata document failed", "client_id", id, "error", err)
		return nil, 0, clientErrorf("could not fetch the client metadata document %s: it must answer 200 with a JSON "+
			"document of at most %d KiB whose client_id is this URL, without redirects (GoRunner's log says why)",
			id, MaxClientDocumentBytes>>10)
	}
	// From here the document names this very URL as its client_id: it is a client's, and
	// what is wrong with it may be told.
	if m := doc.TokenEndpointAuthMethod; m != "" && m != "none" {
		return nil, 0, clientErrorf("the client's metadata document asks for token_endpoint_auth_method %q; GoRunner supports public clients (none)", m)
	}
	// RFC 7591 §2: no grant_types means authorization_code only, so no refresh tokens.
	c, err := s.checkMetadata(doc, u.Host, []string{grantAuthorizationCode})
	if err != nil {
		return nil, 0, err
	}
	c.ID = id
	return &clientInfo{Client: *c, document: true}, documentTTL(header), nil
}

// readClientDocument GETs the document id names and decodes it, checking that it names id
// as its client_id. Its errors are for the log.
func (s *Server) readClientDocument(ctx context.Context, id string) (clientDocument, http.Header, error) {
	var doc clientDocument
	// Not the request's context: a requester hanging up must not leave a failure cached
	// for a URL that works.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ClientDocumentTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return doc, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.fetch.Do(req)
	if err != nil {
		return doc, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return doc, nil, fmt.Errorf("answered %s (redirects are not followed)", resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return doc, nil, fmt.Errorf("content type %q is not JSON", mt)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxClientDocumentBytes+1))
	if err != nil {
		return doc, nil, fmt.Errorf("reading: %w", err)
	}
	if len(body) > MaxClientDocumentBytes {
		return doc, nil, fmt.Errorf("larger than %d bytes", MaxClientDocumentBytes)
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, nil, fmt.Errorf("not a valid JSON object: %w", err)
	}
	if doc.ClientID != id {
		return doc, nil, fmt.Errorf("names client_id %q", doc.ClientID)
	}
	return doc, resp.Header, nil
}

// checkMetadata checks the redirect URIs, name and grant types of a client and fills in
// the defaults: the name falls back to fallbackName, the grant types to defaultGrants.
func (s *Server) checkMetadata(doc clientDocument, fallbackName string, defaultGrants []string) (*Client, error) {
	if len(doc.RedirectURIs) == 0 || len(doc.RedirectURIs) > MaxRedirectURIs {
		return nil, redirectErrorf("a client needs 1 to %d redirect_uris", MaxRedirectURIs)
	}
	for _, r := range doc.RedirectURIs {
		if err := checkRedirectURI(r); err != nil {
			return nil, err
		}
	}
	name := strings.TrimSpace(doc.ClientName)
	if len(name) > MaxClientNameBytes {
		return nil, clientErrorf("client_name is longer than %d bytes", MaxClientNameBytes)
	}
	if strings.ContainsFunc(name, safetext.Unsafe) {
		return nil, clientErrorf("client_name must not contain control or bidirectional formatting characters")
	}
	if name == "" {
		name = fallbackName
	}
	grants := doc.GrantTypes
	if len(grants) == 0 {
		grants = defaultGrants
	}
	for _, g := range grants {
		if g != grantAuthorizationCode && g != grantRefreshToken {
			return nil, clientErrorf("grant type %q is not supported (authorization_code, refresh_token)", g)
		}
	}
	if !slices.Contains(grants, grantAuthorizationCode) {
		return nil, clientErrorf("grant_types must include authorization_code")
	}
	for _, rt := range doc.ResponseTypes {
		if rt != "code" {
			return nil, clientErrorf("response type %q is not supported (code)", rt)
		}
	}
	return &Client{Name: name, RedirectURIs: doc.RedirectURIs, GrantTypes: grants}, nil
}

// checkRedirectURI accepts https URIs, http on a loopback host (native apps, RFC 8252
// §7.3) and private-use schemes (RFC 8252 §7.1); never a fragment, nor a scheme a
// browser would run or read locally.
func checkRedirectURI(r string) error {
	u, err := url.Parse(r)
	if err != nil || len(r) > MaxRedirectURIBytes || !u.IsAbs() {
		return redirectErrorf("redirect URI %q is not an absolute URI", r)
	}
	if !asciiURI(r) || !asciiURI(u.Host) {
		return redirectErrorf("redirect URI %q must be ASCII: write an international host in its xn-- form", r)
	}
	if u.Fragment != "" || strings.Contains(r, "#") {
		return redirectErrorf("redirect URI %q must not have a fragment", r)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return redirectErrorf("redirect URI %q: http is allowed only on a loopback host; use https", r)
		}
	case "javascript", "data", "file", "vbscript", "about", "blob", "filesystem":
		return redirectErrorf("redirect URI %q has a scheme that is not allowed", r)
	}
	return nil
}

// asciiURI reports whether s (a URI, or its host once percent-decoded) is printable ASCII.
// The consent page names the redirect host, the one thing there a client cannot choose
// freely: a host in another script ("сlaude.ai", Cyrillic с), given raw or
// percent-encoded, would read as a host the person trusts. RFC 3986 URIs are ASCII; an
// international host is written in its xn-- form, which the page then shows.
func asciiURI(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f })
}

// errEgressDenied is a metadata document fetch to an address that is not public.
var errEgressDenied = errors.New("the address is not public")

// newFetchClient is the client that fetches metadata documents: no redirects, no proxy,
// a time limit, and the addresses runner's egress policy calls public (checked at dial
// time, so a name resolving to a private address is caught too), plus loopback when
// GoRunner itself serves on loopback (a developer machine, tests).
func newFetchClient(allowLoopback bool) *http.Client {
	var policy *runner.EgressPolicy
	if allowLoopback {
		policy = loopbackPolicy
	}
	dialer := &net.Dialer{Timeout: ClientDocumentTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || policy.Check("", ap) != nil {
			return fmt.Errorf("dialing %s: %w", address, errEgressDenied)
		}
		return nil
	}}
	tr := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: ClientDocumentTimeout,
		ResponseHeaderTimeout: ClientDocumentTimeout, MaxIdleConns: 10, IdleConnTimeout: 30 * time.Second}
	return &http.Client{Transport: tr, Timeout: ClientDocumentTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loopbackPolicy allows loopback addresses besides public ones.
var loopbackPolicy = func() *runner.EgressPolicy {
	p, err := runner.NewEgressPolicy("127.0.0.0/8", "::1/128")
	if err != nil {
		panic(err)
	}
	return p
}()
