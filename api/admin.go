package api

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/auth"
)

func (s *Server) createConnection(w http.ResponseWriter, r *http.Request) {
	var body connectionBody
	if err := decodeJSON(r, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.cfg.Catalog.CreateConnection(r.Context(), body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, c)
}

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	list, err := s.cfg.Catalog.ListConnections(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody{Data: nonNil(list)})
}

func (s *Server) deleteConnection(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Catalog.DeleteConnection(r.Context(), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	list, err := s.cfg.Catalog.Templates()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody{Data: nonNil(list)})
}

func (s *Server) useTemplate(w http.ResponseWriter, r *http.Request) {
	var body nameBody
	if err := decodeJSON(r, &body, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.created(w, r)(s.cfg.Catalog.UseTemplate(r.Context(), chi.URLParam(r, "id"), body.Name))
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var body tokenBody
	if err := decodeJSON(r, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, secret, err := s.cfg.Auth.Create(r.Context(), body.Name)
	if errors.Is(err, auth.ErrInvalidName) {
		err = badRequest("/name", err.Error())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, newTokenView{ID: t.ID, Name: t.Name, Token: secret})
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	list, err := s.cfg.Auth.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]tokenView, len(list))
	for i, t := range list {
		views[i] = tokenView{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt}
	}
	writeJSON(w, http.StatusOK, listBody{Data: views})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Auth.Revoke(r.Context(), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
