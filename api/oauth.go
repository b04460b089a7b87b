package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/wire"
)

// ErrOAuthOff answers the grant routes (API and console) of a server without --public-url.
var ErrOAuthOff = problem.New(http.StatusNotFound, problem.CodeNotFound, "OAuth is off: serve with --public-url to turn it on")

func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.deps.OAuth == nil {
		s.writeError(w, r, ErrOAuthOff)
		return
	}
	gs, err := s.deps.OAuth.ListGrants(r.Context(), principalOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]wire.Grant, len(gs))
	for i, g := range gs {
		views[i] = wire.GrantOf(g)
	}
	writeHeld(s, w, r, page, views)
}

func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request) {
	if s.deps.OAuth == nil {
		s.writeError(w, r, ErrOAuthOff)
		return
	}
	if err := s.deps.OAuth.RevokeGrant(r.Context(), principalOf(r), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
