package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorunner/gorunner/auth"
)

// visit is who is signed in, for the handlers and the templates.
type visit struct {
	principal auth.Principal
	sess      *session
	csrf      string
}

type visitKey struct{}

func visitOf(r *http.Request) *visit {
	v, _ := r.Context().Value(visitKey{}).(*visit)
	return v
}

// requireSession lets signed-in people through: pages send others to sign in; a form post
// must carry the session's CSRF token and come from this origin, else 403 and nothing is
// done. A revoked token ends its sessions at once.
func (c *Console) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, err := c.sessions.read(r)
		var p auth.Principal
		if err == nil {
			p, err = c.principal(r.Context(), sess.Token)
		}
		if err != nil {
			if !errors.Is(err, errNoSession) && !errors.Is(err, auth.ErrUnauthorized) {
				c.fail(w, r, err)
				return
			}
			c.sessions.end(w)
			http.Redirect(w, r, "/console/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		v := &visit{principal: p, sess: sess, csrf: c.sessions.csrfToken(sess)}
		if r.Method == http.MethodPost && !c.formAllowed(r, v) {
			c.render(w, r, http.StatusForbidden, "error", "Forbidden",
				errorPage{Message: "This form was not sent from this console session (its CSRF token is missing or wrong, or it came from another address than " +
					c.origin + "). Reload the page there and try again."})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), visitKey{}, v)))
	})
}

// resource is what the console is as a token audience: an audience-limited token (an
// OAuth access token, valid at /mcp only) signs nobody in here.
const resource = "/console"

// principal authenticates a console token; one limited to another resource is
// auth.ErrUnauthorized, as an unknown one is. Else an assistant holding an OAuth access
// token could act through the console, not only /mcp, and with admin mint itself a token
// valid everywhere that outlives its grant.
func (c *Console) principal(ctx context.Context, token string) (auth.Principal, error) {
	p, err := c.deps.Auth.Authenticate(ctx, token)
	if err == nil && !p.ValidFor(resource) {
		return auth.Principal{}, auth.ErrUnauthorized
	}
	return p, err
}

// formAllowed checks a post's CSRF token and its origin.
func (c *Console) formAllowed(r *http.Request, v *visit) bool {
	return c.sameOrigin(r) && c.sessions.checkCSRF(v.sess, r.PostFormValue("csrf"))
}

// sameOrigin is false for a request whose browser says it comes from another origin than
// the console's public one (Config.BaseURL, which is required). The Host header is not
// compared: behind a proxy it is the proxy's upstream, and a client may send any. "null"
// (a sandboxed frame, a page without referrer) is not this origin: the console's pages send
// their own. A request without Origin is from no browser, or an old one; session forms
// still need their CSRF token.
func (c *Console) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && originOf(u) == c.origin
}

// originOf is u's origin as a browser serialises it: scheme://host[:port], lower case,
// without the scheme's default port.
func originOf(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		return scheme + "://" + host
	}
	return scheme + "://" + host + ":" + port
}

type signinPage struct {
	Next    string
	Problem string
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "signin", "Sign in", signinPage{Next: safeNext(r.URL.Query().Get("next"))})
}

// signin checks the token and starts a session. A sign-in posted from another origin is
// refused, so no other site can sign a person in under its own token (login CSRF).
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	if !c.sameOrigin(r) {
		c.render(w, r, http.StatusForbidden, "error", "Forbidden", errorPage{Message: "Sign in from this console's own page, at " + c.origin + "."})
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if _, err := c.principal(r.Context(), token); err != nil {
		if !errors.Is(err, auth.ErrUnauthorized) {
			c.fail(w, r, err)
			return
		}
		c.render(w, r, http.StatusUnauthorized, "signin", "Sign in",
			signinPage{Next: next, Problem: "That token is not valid: it is unknown, revoked or mistyped."})
		return
	}
	if err := c.sessions.start(w, token); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request) {
	c.sessions.end(w)
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
}

// safeNext keeps a post-sign-in redirect on this site. Browsers drop tabs and newlines
// from a Location, so "/\t/evil.example" would leave it: control characters are refused.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return "/console/runs"
	}
	return next
}
