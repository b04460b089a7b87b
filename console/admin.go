package console

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
)

type keysPage struct {
	Keys []keyRow
	Next template.URL
}

// keyRow is one of the person's idempotency keys; the kept answer is never shown.
type keyRow struct {
	Key, State, Method, Path, RunID string
	Status                          int
	CreatedAt, ExpiresAt            time.Time
}

func (c *Console) listKeys(w http.ResponseWriter, r *http.Request) {
	v := visitOf(r)
	recs, next, err := c.cfg.Idempotency.Keys(r.Context(), idempotency.PrincipalScope(v.principal.ID),
		r.URL.Query().Get("cursor"), PageSize)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p := keysPage{}
	for _, k := range recs {
		p.Keys = append(p.Keys, keyRow{Key: k.Key, State: api.KeyState(k.State), Method: k.Method, Path: k.Path,
			RunID: k.RunID, Status: k.Status, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt})
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
	c.showTokens(w, r, http.StatusOK, tokensPage{Notice: r.URL.Query().Get("notice")})
}

func (c *Console) showTokens(w http.ResponseWriter, r *http.Request, status int, p tokensPage) {
	list, err := c.cfg.Auth.List(r.Context())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p.Tokens = list
	c.render(w, r, status, "tokens", "Tokens", p)
}

// createToken creates a token and shows its secret on the answer page, once; the page is
// not cached and the secret is never in a URL.
func (c *Console) createToken(w http.ResponseWriter, r *http.Request) {
	by := visitOf(r).principal
	tok, secret, err := c.cfg.Auth.Issue(r.Context(), auth.IssueParams{Name: r.PostFormValue("name"), Scopes: by.Scopes, By: &by})
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

func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := c.cfg.Auth.Revoke(r.Context(), chi.URLParam(r, "id")); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/tokens?notice="+url.QueryEscape("Token revoked."), http.StatusSeeOther)
}
