package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/wire"
)

func (s *Server) createConnection(w http.ResponseWriter, r *http.Request) {
	var body connectionBody
	if err := decodeJSON(r, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.deps.Catalog.CreateConnection(r.Context(), body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, wire.ConnectionOf(c))
}

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.deps.Catalog.ListConnections(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeHeld(s, w, r, page, wire.ConnectionsOf(list))
}

func (s *Server) deleteConnection(w http.ResponseWriter, r *http.Request) {
	if err := s.deps.Catalog.DeleteConnection(r.Context(), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.deps.Catalog.Templates()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeHeld(s, w, r, page, list)
}

func (s *Server) useTemplate(w http.ResponseWriter, r *http.Request) {
	var body nameBody
	if err := decodeJSON(r, &body, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.created(w, r)(s.deps.Catalog.UseTemplate(r.Context(), chi.URLParam(r, "id"), body.Name))
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var body createTokenBody
	if err := decodeJSON(r, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := TokenParams(principalOf(r), body.Name, body.Scopes, body.ExpiresIn)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, secret, err := s.deps.Auth.Issue(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, wire.NewTokenOf(t, secret))
}

// TokenParams reads what a token is created with, for the API and the console: scopes
// default (nil) to by's own, expiresIn ("" for never) is a positive Go duration.
func TokenParams(by auth.Principal, name string, scopes []string, expiresIn string) (auth.IssueParams, error) {
	p := auth.IssueParams{Name: name, Scopes: by.Scopes, By: &by}
	if scopes != nil {
		parsed, err := auth.ParseScopes(scopes)
		if err != nil {
			return p, badRequest("/scopes", err.Error())
		}
		p.Scopes = parsed
	}
	if expiresIn != "" {
		d, err := time.ParseDuration(expiresIn)
		if err != nil || d <= 0 {
			return p, badRequest("/expiresIn", "expiresIn must be a positive Go duration such as 720h")
		}
		p.ExpiresIn = d
	}
	return p, nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.deps.Auth.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]wire.Token, len(list))
	for i, t := range list {
		views[i] = wire.TokenOf(t)
	}
	writeHeld(s, w, r, page, views)
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := RevokeToken(r.Context(), s.deps.Auth, s.deps.OAuth, chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// RevokeToken revokes token id for the API and the console: with OAuth on (o not nil),
// the grants the token approved go too (oauth.Server.RevokeToken).
func RevokeToken(ctx context.Context, a *auth.Service, o *oauth.Server, id string) error {
	if o != nil {
		return o.RevokeToken(ctx, id)
	}
	return a.Revoke(ctx, id)
}
