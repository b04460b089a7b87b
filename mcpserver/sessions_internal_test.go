package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/syncbuf"
	"github.com/gorunner/gorunner/stack/stacktest"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// initializeAs opens a streamable HTTP session on srv as principal id (the test server
// puts the principal named by X-Principal in the context, as api's bearer middleware does).
func initializeAs(t *testing.T, srv *httptest.Server, id, env string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp?environment="+env, strings.NewReader(initializeBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Principal", id)
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode)
	sid := res.Header.Get(sessionHeader)
	require.NotEmpty(t, sid)
	return sid
}

// TestStopClosesSessionsQuietly: Stop ends every streamable HTTP session, of several
// principals in both environments, without a WARN: mcp-go ends them at shutdown through
// the session ID manager it resolves without a request, which once refused every ID ("invalid
// session ID") and logged one WARN per session.
func TestStopClosesSessionsQuietly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs syncbuf.Buffer
	st := stacktest.New(t, stacktest.Config{})
	s, err := New(Deps{Catalog: st.Catalog, Engine: st.Engine, Idempotency: st.Idempotency},
		&Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	h := s.HTTPHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.Principal{ID: r.Header.Get("X-Principal"), Scopes: auth.AdminScopes()}
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	for _, p := range []string{"alice", "bob"} {
		for _, env := range []string{"production", "test"} {
			for range 3 {
				initializeAs(t, srv, p, env)
			}
		}
	}
	require.Equal(t, 4, s.heldKeys(), "two principals in two environments hold sessions")

	require.NoError(t, s.Stop(ctx))
	require.NotContains(t, logs.String(), "level=WARN")
	require.NotContains(t, logs.String(), "level=ERROR")
	require.Zero(t, s.heldKeys(), "every session was ended")
}

func (s *Server) heldKeys() int {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	return len(s.held.ids)
}

// TestSessionManagers: only the manager resolved without a request ends any principal's
// session, and only IDs of GoRunner's form (another is an error, which mcp-go logs); a
// request ends only its principal's sessions, and one without a principal none.
func TestSessionManagers(t *testing.T) {
	t.Parallel()
	alice := auth.Principal{ID: "alice"}
	id := boundSessions{p: alice}.Generate()
	withPrincipal := func(p *auth.Principal) *http.Request {
		r := httptest.NewRequest(http.MethodDelete, "/mcp", nil)
		if p != nil {
			r = r.WithContext(auth.WithPrincipal(r.Context(), *p))
		}
		return r
	}
	tests := []struct {
		name  string
		r     *http.Request
		id    string
		ended bool
	}{
		{"no request, any principal's session", nil, id, true},
		{"no request, an ID of another form", nil, "3f2c9a4e-session", false},
		{"no request, a malformed digest", nil, sessionPrefix + "nonce.short", false},
		{"the session's principal", withPrincipal(&alice), id, true},
		{"another principal", withPrincipal(&auth.Principal{ID: "mallory"}), id, false},
		{"a request without a principal", withPrincipal(nil), id, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			notAllowed, err := (sessionIDs{}).ResolveSessionIdManager(tt.r).Terminate(tt.id)
			require.False(t, notAllowed)
			if tt.ended {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, errForeignSession)
			}
		})
	}
	_, err := (sessionIDs{}).ResolveSessionIdManager(nil).Validate(id)
	require.ErrorIs(t, err, errForeignSession, "without a request no session is valid")
}
