package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
)

// KeyView is one of the caller's idempotency keys (SPEC §3), as the API and the console
// show it. The kept answer itself is never listed: it is replayed only by a retry of the
// same request by the same principal.
type KeyView struct {
	Key       string    `json:"key"`
	State     string    `json:"state" jsonschema:"enum=in_progress,enum=kept,enum=taken"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Status    int       `json:"status,omitempty" jsonschema:"description=The kept answer's HTTP status; absent while in progress."`
	RunID     string    `json:"runId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// keyState is the SPEC's word for a record's state: in_progress, kept or taken.
func keyState(s idempotency.State) string {
	if s == idempotency.StateDone {
		return "kept"
	}
	return string(s)
}

// KeyViewOf is the view of a key record.
func KeyViewOf(r *idempotency.Record) KeyView {
	return KeyView{Key: r.Key, State: keyState(r.State), Method: r.Method, Path: r.Path, Status: r.Status,
		RunID: r.RunID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, _ := auth.PrincipalFrom(r.Context())
	recs, next, err := s.cfg.Idempotency.Keys(r.Context(), idempotency.PrincipalScope(p.ID), page.Cursor, page.Limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]KeyView, len(recs))
	for i, rec := range recs {
		views[i] = KeyViewOf(rec)
	}
	writeJSON(w, http.StatusOK, listBody{Data: views, NextCursor: next})
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request) {
	key := chi.URLParam(r, "key")
	if r.URL.RawPath != "" { // routed on the escaped path: a key may hold "/" as %2F
		var err error
		if key, err = url.PathUnescape(key); err != nil {
			s.writeError(w, r, badRequest("/key", "the key is not a valid escaped path segment"))
			return
		}
	}
	p, _ := auth.PrincipalFrom(r.Context())
	rec, err := s.cfg.Idempotency.Key(r.Context(), idempotency.PrincipalScope(p.ID), key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, KeyViewOf(rec))
}
