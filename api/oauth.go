package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/problem"
)

// grantView is an OAuth grant: a client a person approved, with what it may do.
type grantView struct {
	ID          string    `json:"id"`
	ClientID    string    `json:"clientId" jsonschema:"description=A Client ID Metadata Document URL, or the ID of a dynamically registered client."`
	ClientName  string    `json:"clientName"`
	PrincipalID string    `json:"principalId" jsonschema:"description=The token (or local sign-in) that approved the grant."`
	Principal   string    `json:"principal"`
	Scopes      []string  `json:"scopes"`
	CreatedAt   time.Time `json:"createdAt"`
	RefreshBy   time.Time `json:"refreshExpiresAt" jsonschema:"description=When the current refresh token stops working unless used."`
	Tokens      int       `json:"tokensIssued"`
}

func newGrantView(g *oauth.Grant) grantView {
	return grantView{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, PrincipalID: g.PrincipalID,
		Principal: g.PrincipalName, Scopes: strings.Fields(g.Scope), CreatedAt: g.CreatedAt,
		RefreshBy: g.RefreshExpiresAt, Tokens: len(g.TokenIDs)}
}

// ErrOAuthOff answers the grant routes (API and console) of a server without --public-url.
var ErrOAuthOff = problem.New(http.StatusNotFound, problem.CodeNotFound, "OAuth is off: serve with --public-url to turn it on")

func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) {
	if s.cfg.OAuth == nil {
		s.writeError(w, r, ErrOAuthOff)
		return
	}
	gs, err := s.cfg.OAuth.ListGrants(r.Context(), principalOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]grantView, len(gs))
	for i, g := range gs {
		views[i] = newGrantView(g)
	}
	writeJSON(w, http.StatusOK, listBody{Data: views})
}

func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request) {
	if s.cfg.OAuth == nil {
		s.writeError(w, r, ErrOAuthOff)
		return
	}
	if err := s.cfg.OAuth.RevokeGrant(r.Context(), principalOf(r), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
