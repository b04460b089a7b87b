package api

import (
	"bytes"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
)

// keyedReplay puts a route behind the keyed-replay store. Principal routes keep keys per
// caller; webhook routes per workflow, keeping every answer and evicting the oldest keys
// instead of refusing (SPEC §4 rule 10).
func (s *Server) keyedReplay(k keyed) func(http.Handler) http.Handler {
	scopeOf := func(r *http.Request) (string, idempotency.Policy, bool) {
		p, ok := auth.PrincipalFrom(r.Context())
		if !ok {
			return "", idempotency.Policy{}, false
		}
		return idempotency.PrincipalScope(p.ID), idempotency.Policy{}, true
	}
	if k == webhookKeyed {
		scopeOf = func(r *http.Request) (string, idempotency.Policy, bool) {
			return idempotency.WorkflowScope(webhookOf(r).ID), idempotency.Policy{KeepFailures: true, EvictOldest: true}, true
		}
	}
	return s.cfg.Idempotency.Middleware(scopeOf, s.writeError)
}

// RunPath is the canonical path of a run request: the workflow by name. MCP tool calls are
// fingerprinted as this path, so a REST retry by ID or by name replays an MCP call.
func RunPath(workflowName string) string { return "/api/workflows/" + workflowName + "/run" }

// canonicalRun gives a keyed run request the form an MCP tool call has (SPEC §4 rule 11):
// the workflow by name, the environment spelled out, an empty body as {}. Only the copy
// the keyed-replay middleware sees changes; routing is done.
func (s *Server) canonicalRun(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(idempotency.HeaderKey) == "" {
			next.ServeHTTP(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		if wf, err := s.cfg.Catalog.Get(r.Context(), chi.URLParam(r, "id")); err == nil {
			r2.URL.Path = RunPath(wf.Name)
		}
		if env, err := environmentOf(r); err == nil {
			q := r2.URL.Query()
			q.Set("environment", env)
			r2.URL.RawQuery = q.Encode()
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if len(bytes.TrimSpace(body)) == 0 {
			body = []byte("{}")
		}
		r2.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r2)
	})
}
