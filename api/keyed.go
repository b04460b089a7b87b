package api

import (
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
			wf, err := s.cfg.Catalog.GetByWebhook(r.Context(), chi.URLParam(r, "token"))
			if err != nil {
				return "", idempotency.Policy{}, false
			}
			return idempotency.WorkflowScope(wf.ID), idempotency.Policy{KeepFailures: true, EvictOldest: true}, true
		}
	}
	return s.cfg.Idempotency.Middleware(scopeOf, s.writeError)
}
