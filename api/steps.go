package api

import (
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// runSteps serves GET /api/runs/{id}/steps?parent=PATH&cursor=&limit=: the records under
// PATH (a top-level step's id, or a deeper path such as charge-each/3), in record order.
func (s *Server) runSteps(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	parent := r.URL.Query().Get("parent")
	if parent == "" {
		s.writeError(w, r, badRequest("/parent", "parent is required: the path of the step whose records to list"))
		return
	}
	from, ok := stepCursor(page.Cursor)
	if !ok {
		s.writeError(w, r, badRequest("/cursor", "cursor is not one this list gave out"))
		return
	}
	run, err := s.deps.Engine.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	recs, next := runner.StepsUnder(run, parent, from, page.Limit)
	cursor := ""
	if next > 0 {
		cursor = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(next)))
	}
	writeJSON(w, http.StatusOK, listBody{Data: nonNil(wire.StepsOf(recs)), NextCursor: cursor})
}

// stepCursor reads a cursor of runSteps: the position of the page's first record.
func stepCursor(c string) (int, bool) {
	if c == "" {
		return 0, true
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(b))
	return n, err == nil && n > 0
}
