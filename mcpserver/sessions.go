package mcpserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
)

// MaxSessionsPerPrincipal bounds the streamable HTTP sessions one principal holds at once in
// one environment.
// mcp-go keeps a session (about 16 KB) from its initialize until a DELETE, so a client that
// initializes again and again without ending its sessions would grow the process without
// bound; past the limit the principal's oldest session is ended, as a DELETE would.
const MaxSessionsPerPrincipal = 256

// sessionsHeld are the sessions each principal holds in each environment, oldest first.
type sessionsHeld struct {
	mu  sync.Mutex
	ids map[string][]string // heldKey → session IDs
	key map[string]string   // session ID → its heldKey, so that forgetting one looks at one list
}

// heldKey keys the sessions of a principal in an environment (each has its transport).
func heldKey(env, principal string) string { return env + "\x00" + principal }

// hooks count the sessions registered in env with a principal, and forget them when they
// end.
func (h *sessionsHeld) hooks(env string, hk *server.Hooks) {
	hk.AddOnRegisterSession(func(ctx context.Context, session server.ClientSession) {
		p, ok := auth.PrincipalFrom(ctx)
		if !ok || p.ID == "" {
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.ids == nil {
			h.ids, h.key = map[string][]string{}, map[string]string{}
		}
		key, id := heldKey(env, p.ID), session.SessionID()
		h.ids[key] = append(h.ids[key], id)
		h.key[id] = key
	})
	hk.AddOnUnregisterSession(func(_ context.Context, session server.ClientSession) {
		h.forget(session.SessionID())
	})
}

// forget drops session id wherever it is held.
func (h *sessionsHeld) forget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key, ok := h.key[id]
	if !ok {
		return
	}
	delete(h.key, id)
	ids := h.ids[key]
	if i := slices.Index(ids, id); i >= 0 {
		ids = slices.Delete(ids, i, i+1)
	}
	if len(ids) == 0 {
		delete(h.ids, key)
	} else {
		h.ids[key] = ids
	}
}

// holds reports whether principal's session id is held in env (h may be nil: none is).
func (h *sessionsHeld) holds(env, principal, id string) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	key, ok := h.key[id]
	return ok && key == heldKey(env, principal)
}

// excess returns the oldest sessions of principal in env beyond MaxSessionsPerPrincipal.
func (h *sessionsHeld) excess(env, principal string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := h.ids[heldKey(env, principal)]
	if len(ids) <= MaxSessionsPerPrincipal {
		return nil
	}
	return slices.Clone(ids[:len(ids)-MaxSessionsPerPrincipal])
}

// endExcessSessions ends the sessions p holds beyond MaxSessionsPerPrincipal, oldest first,
// through env's transport as a DELETE of the client r came from would, so that mcp-go lets
// go of all it keeps for them.
func (s *Server) endExcessSessions(r *http.Request, env *environment, p auth.Principal) {
	ctx := r.Context()
	for _, id := range s.held.excess(env.name, p.ID) {
		// Cannot fail: the method, the URL and the context are all valid.
		req, _ := http.NewRequestWithContext(auth.WithPrincipal(context.WithoutCancel(ctx), p), http.MethodDelete, "/mcp", nil)
		req.Header.Set(sessionHeader, id)
		req.Host = r.Host // mcp-go checks it (DNS rebinding)
		env.http.ServeHTTP(discardResponse{header: http.Header{}}, req)
		s.held.forget(id) // in case mcp-go had not registered it with the server
	}
}

// endingSessions is the session ID manager mcp-go resolves without a request: for
// CloseSessions at Stop (and for its idle sweeper, were one configured). Both only end
// sessions this process registered, whoever holds them, so it ends any ID GoRunner mints;
// it mints and validates as boundSessions of no principal (nothing), and an ID not of
// GoRunner's form is an error, which mcp-go logs.
type endingSessions struct{ boundSessions }

func (endingSessions) Terminate(id string) (bool, error) {
	if !mintedForm(id) {
		return false, errForeignSession
	}
	return false, nil
}

// mintedForm reports whether id has the form of the session IDs boundSessions mints,
// whoever it was minted for.
func mintedForm(id string) bool {
	rest, ok := strings.CutPrefix(id, sessionPrefix)
	nonce, digest, dot := strings.Cut(rest, ".")
	return ok && dot && nonce != "" && len(digest) == 32
}

// discardResponse is a ResponseWriter that keeps nothing.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header         { return d.header }
func (d discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d discardResponse) WriteHeader(int)             {}
