package console

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/wire"
)

type keysPage struct {
	Keys []wire.Key // the kept answers are never shown
	Next template.URL
}

func (c *Console) listKeys(w http.ResponseWriter, r *http.Request) {
	v := visitOf(r)
	recs, next, err := c.deps.Idempotency.Keys(r.Context(), idempotency.PrincipalScope(v.principal.ID),
		r.URL.Query().Get("cursor"), PageSize)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p := keysPage{}
	for _, k := range recs {
		p.Keys = append(p.Keys, wire.KeyOf(k))
	}
	if next != "" {
		p.Next = pageURL("/console/keys", url.Values{"cursor": {next}})
	}
	c.render(w, r, http.StatusOK, "keys", "Idempotency keys", p)
}

type tokensPage struct {
	Tokens  []*auth.Token
	Created *auth.Token // the token just created, its secret shown once
	Secret  string
	Problem *errorPage
	Notice  string
}

func (c *Console) listTokens(w http.ResponseWriter, r *http.Request) {
	c.showTokens(w, r, http.StatusOK, tokensPage{Notice: c.takeNotice(w, r)})
}

func (c *Console) showTokens(w http.ResponseWriter, r *http.Request, status int, p tokensPage) {
	list, err := c.deps.Auth.List(r.Context())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p.Tokens = list
	c.render(w, r, status, "tokens", "Tokens", p)
}

// createToken creates a token and shows its secret on the answer page, once; the page is
// not cached and the secret is never in a URL. Scopes are space-separated (none: the
// signed-in token's own), expiry a Go duration (none: never); asking for scopes the
// signed-in token does not hold is refused (api.TokenParams, auth.Service.Issue).
func (c *Console) createToken(w http.ResponseWriter, r *http.Request) {
	var scopes []string
	if f := strings.Fields(r.PostFormValue("scopes")); len(f) > 0 {
		scopes = f
	}
	params, err := api.TokenParams(visitOf(r).principal, r.PostFormValue("name"), scopes, strings.TrimSpace(r.PostFormValue("expiresIn")))
	var tok *auth.Token
	var secret string
	if err == nil {
		tok, secret, err = c.deps.Auth.Issue(r.Context(), params)
	}
	if errors.Is(err, auth.ErrInvalidName) {
		err = invalid("/name", err.Error())
	}
	if err != nil {
		status, p := c.problem(r, err)
		c.showTokens(w, r, status, tokensPage{Problem: &p})
		return
	}
	c.showTokens(w, r, http.StatusCreated, tokensPage{Created: tok, Secret: secret})
}

// revokeToken revokes a token as DELETE /api/tokens/{id} does: with the grants it approved.
func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := api.RevokeToken(r.Context(), c.deps.Auth, c.deps.OAuth, chi.URLParam(r, "id")); err != nil {
		c.fail(w, r, err)
		return
	}
	c.redirectWithNotice(w, r, "/console/tokens", "Token revoked.")
}

type grantsPage struct {
	On     bool // OAuth is on
	Grants []grantRow
	Notice string
}

// grantRow is an OAuth grant. A grant keeps no redirect URI nor last use: ClientHost is
// the host of a Client ID Metadata Document URL (empty for a registered client).
type grantRow struct {
	ID, ClientID, ClientName, ClientHost, Principal string
	Scopes                                          []string
	CreatedAt, RefreshBy                            time.Time
	Tokens                                          int
}

// listGrants lists OAuth grants as GET /api/oauth/grants does: all for an admin, else the
// signed-in principal's own.
func (c *Console) listGrants(w http.ResponseWriter, r *http.Request) {
	p := grantsPage{On: c.deps.OAuth != nil, Notice: c.takeNotice(w, r)}
	if p.On {
		gs, err := c.deps.OAuth.ListGrants(r.Context(), visitOf(r).principal)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		for _, g := range gs {
			row := grantRow{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, Principal: g.PrincipalName,
				Scopes: strings.Fields(g.Scope), CreatedAt: g.CreatedAt, RefreshBy: g.RefreshExpiresAt, Tokens: len(g.TokenIDs)}
			if u, err := url.Parse(g.ClientID); err == nil && u.Scheme == "https" {
				row.ClientHost = u.Host
			}
			p.Grants = append(p.Grants, row)
		}
	}
	c.render(w, r, http.StatusOK, "grants", "OAuth grants", p)
}

// revokeGrant revokes a grant and its tokens as DELETE /api/oauth/grants/{id} does: an
// admin, or the principal that approved it; another's grant answers as an unknown one.
func (c *Console) revokeGrant(w http.ResponseWriter, r *http.Request) {
	if c.deps.OAuth == nil {
		c.fail(w, r, api.ErrOAuthOff)
		return
	}
	if err := c.deps.OAuth.RevokeGrant(r.Context(), visitOf(r).principal, chi.URLParam(r, "id")); err != nil {
		c.fail(w, r, err)
		return
	}
	c.redirectWithNotice(w, r, "/console/grants", "Grant revoked.")
}
