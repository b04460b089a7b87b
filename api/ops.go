package api

import (
	"net/http"

	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/schemas"
)

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(r.Context()); err != nil {
			s.log.WarnContext(r.Context(), "not ready", "error", err)
			s.writeError(w, r, problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable, "the store is not reachable"))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) workflowSchema(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/schema+json")
	_, _ = w.Write(schemas.DefinitionSchema())
}
