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
	ids map[string][]string    // heldKey → session IDs
	key map[string]heldSession // session ID → its heldKey (so that forgetting one looks at one list) and version
}

// heldSession is what is kept of a held session: its heldKey, and the protocol version its
// initialize negotiated ("" for a session a GET opened).
type heldSession struct{ key, version string }

// versioned is a session that knows the protocol version its initialize negotiated.
type versioned interface{ ProtocolVersion() string }

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
			h.ids, h.key = map[string][]string{}, map[string]heldSession{}
		}
		held := heldSession{key: heldKey(env, p.ID)}
		if v, ok := session.(versioned); ok {
			held.version = v.ProtocolVersion()
		}
		id := session.SessionID()
		h.ids[held.key] = append(h.ids[held.key], id)
		h.key[id] = held
	})
	hk.AddOnUnregisterSession(func(_ context.Context, session server.ClientSession) {
		h.forget(session.SessionID())
	})
}

// forget drops session id wherever it is held.
func (h *sessionsHeld) forget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.key[id]
	if !ok {
		return
	}
	delete(h.key, id)
	key := held.key
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
	_, ok := h.version(env, principal, id)
	return ok
}

// version is the protocol version principal's session id in env negotiated, and whether
// env holds that session (h may be nil: none is).
func (h *sessionsHeld) version(env, principal, id string) (string, bool) {
	if h == nil {
		return "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.key[id]
	if !ok || held.key != heldKey(env, principal) {
		return "", false
	}
	return held.version, true
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
// through mcp-go's transport as a DELETE of the client r came from would, so that mcp-go lets
// go of all it keeps for them.
func (t *httpTransport) endExcessSessions(r *http.Request, p auth.Principal) {
	ctx := r.Context()
	for _, id := range t.held.excess(t.env.name, p.ID) {
		// Cannot fail: the method, the URL and the context are all valid.
		req, _ := http.NewRequestWithContext(auth.WithPrincipal(context.WithoutCancel(ctx), p), http.MethodDelete, "/mcp", nil)
		req.Header.Set(sessionHeader, id)
		req.Host = r.Host // mcp-go checks it (DNS rebinding)
		t.env.http.ServeHTTP(&recorded{header: http.Header{}}, req)
		t.held.forget(id) // in case mcp-go had not registered it with the server
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
