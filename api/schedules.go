package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/scheduler"
)

// listSchedules answers the schedules of the workflow's published version, each with its
// next five ticks; none when it is not published.
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	wf, err := s.deps.Catalog.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := scheduler.Upcoming(r.Context(), s.deps.Catalog, wf, time.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody{Data: list})
}
