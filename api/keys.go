package api

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/wire"
)

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := principalOf(r)
	recs, next, err := s.deps.Idempotency.Keys(r.Context(), idempotency.PrincipalScope(p.ID), page.Cursor, page.Limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]wire.Key, len(recs))
	for i, rec := range recs {
		views[i] = wire.KeyOf(rec)
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
	p := principalOf(r)
	rec, err := s.deps.Idempotency.Key(r.Context(), idempotency.PrincipalScope(p.ID), key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, wire.KeyOf(rec))
}
