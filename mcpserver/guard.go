package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
)

// guard checks what mcp-go does not before a request reaches it: the Origin (403 unless
// it is the public URL's or an allowed one), the session (another principal's
// Mcp-Session-Id is unknown: 404). The router, which reads the body, refuses invalid UTF-8.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !s.origins[normalOrigin(o)] {
			http.Error(w, "Forbidden: origin "+o+" is not allowed (see --allowed-origins)", http.StatusForbidden)
			return
		}
		p, ok := auth.PrincipalFrom(r.Context())
		if !ok {
			http.Error(w, errUnauthenticated.Error(), http.StatusUnauthorized)
			return
		}
		if id := r.Header.Get(server.HeaderKeySessionID); id != "" && !ownsSession(p, id) {
			http.Error(w, "Invalid session ID", http.StatusNotFound)
			return
		}
		next.ServeHTTP(w, r) // the body's UTF-8 is checked where it is read once, by the router
	})
}

// allowedOrigins is the set of origins a browser may call /mcp from.
func allowedOrigins(publicURL string, extra []string) map[string]bool {
	set := map[string]bool{}
	for _, o := range append([]string{publicURL}, extra...) {
		if o != "" {
			set[normalOrigin(o)] = true
		}
	}
	return set
}

// normalOrigin is an origin (or URL) as scheme://host[:port], lower case, without its
// scheme's default port, so that equal origins compare equal.
func normalOrigin(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return strings.ToLower(raw)
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if (scheme == "http" && u.Port() == "80") || (scheme == "https" && u.Port() == "443") {
		host = strings.ToLower(u.Hostname())
	}
	return scheme + "://" + host
}

// sessionPrefix starts every session ID GoRunner mints.
const sessionPrefix = "mcp-session-"

// sessionIDs mints session IDs bound to the principal of the request: the ID carries a
// digest of the principal and a random part, so any process sharing the store can tell,
// without state, whether a session ID belongs to the caller. Guessing another principal's
// ID is as hard as guessing its random part; presenting a stolen one with one's own token
// fails the digest. An ID of the caller's is valid only while env's transport holds its
// session: one ended (DELETE, or past MaxSessionsPerPrincipal) or that another process
// opened is terminated, 404.
type sessionIDs struct {
	held *sessionsHeld
	env  string
}

// ResolveSessionIdManager binds the session IDs of r to r's principal; without a request
// (shutdown, a sweeper), which can only end sessions, it is endingSessions.
func (ids sessionIDs) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return endingSessions{}
	}
	p, _ := auth.PrincipalFrom(r.Context())
	return boundSessions{p: p, held: ids.held, env: ids.env}
}

// boundSessions is the session ID manager of one principal in one environment.
type boundSessions struct {
	p    auth.Principal
	held *sessionsHeld
	env  string
}

func (b boundSessions) Generate() string {
	nonce := uuid.NewString()
	return sessionPrefix + nonce + "." + sessionDigest(b.p, nonce)
}

// Validate refuses an ID minted for another principal, and reports one of b's that its
// environment no longer holds (or never did) as terminated.
func (b boundSessions) Validate(id string) (isTerminated bool, err error) {
	if !ownsSession(b.p, id) {
		return false, errForeignSession
	}
	return !b.held.holds(b.env, b.p.ID, id), nil
}

// Terminate lets b's principal end its own sessions only.
func (b boundSessions) Terminate(id string) (bool, error) {
	if !ownsSession(b.p, id) {
		return false, errForeignSession
	}
	return false, nil
}

// errForeignSession: the session ID was not minted for the caller.
var errForeignSession = errors.New("invalid session ID")

// ownsSession reports whether session ID id was minted for p.
func ownsSession(p auth.Principal, id string) bool {
	nonce, digest, ok := strings.Cut(strings.TrimPrefix(id, sessionPrefix), ".")
	return ok && strings.HasPrefix(id, sessionPrefix) && p.ID != "" && digest == sessionDigest(p, nonce)
}

func sessionDigest(p auth.Principal, nonce string) string {
	sum := sha256.Sum256([]byte("gorunner-mcp-session\x00" + p.ID + "\x00" + nonce))
	return hex.EncodeToString(sum[:16])
}
