package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

const greetYAML = `name: greet
input:
  type: object
  properties:
    name: {type: string}
steps:
  - id: hello
    set: "Hello, ${{ input.name }}!"
`

// TestCSRF performs the attack: a signed-in person's browser is made to post a form from
// elsewhere, without the session's CSRF token, with a wrong one, with another session's,
// or from another origin. Each is refused with 403 and nothing changes; the real form works.
func TestCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.createWorkflow(greetYAML)
	victim, attacker := e.browser(), e.browser()
	require.Equal(t, http.StatusSeeOther, victim.signIn(e.token).Status)
	require.Equal(t, http.StatusSeeOther, attacker.signIn(e.token).Status)
	good := victim.csrf("/console/workflows/greet")
	foreign := attacker.csrf("/console/workflows/greet")
	require.NotEqual(t, good, foreign, "each session has its own token")

	tests := []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"no token", url.Values{}, nil},
		{"wrong token", url.Values{"csrf": {"AAAA" + good[4:]}}, nil},
		{"another session's token", url.Values{"csrf": {foreign}}, nil},
		{"another origin", url.Values{"csrf": {good}}, []string{"Origin", "https://evil.example"}},
	}
	for _, tc := range tests {
		p := victim.post("/console/workflows/greet/publish", tc.form, tc.header...)
		require.Equal(t, http.StatusForbidden, p.Status, tc.name)
		require.Contains(t, p.Body, "CSRF", tc.name)
		wf, err := e.catalog.Get(context.Background(), "greet")
		require.NoError(t, err)
		require.Zero(t, wf.LatestVersion, "%s: nothing was published", tc.name)
		p = victim.post("/console/tokens", url.Values{"name": {"stolen"}, "csrf": tc.form["csrf"]}, tc.header...)
		require.Equal(t, http.StatusForbidden, p.Status, tc.name)
	}
	tokens, err := e.auth.List(context.Background())
	require.NoError(t, err)
	require.Len(t, tokens, 1, "no token was created")

	p := victim.post("/console/workflows/greet/publish", url.Values{"csrf": {good}}, "Origin", e.srv.URL)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	wf, err := e.catalog.Get(context.Background(), "greet")
	require.NoError(t, err)
	require.Equal(t, 1, wf.LatestVersion)
}

func TestSessionCookie(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		baseURL string
		secure  bool
	}{{"", false}, {"https://runner.example", true}} {
		e := newEnv(t, tc.baseURL)
		p := e.browser().signIn(e.token)
		require.Equal(t, http.StatusSeeOther, p.Status)
		cookie := p.Header.Get("Set-Cookie")
		require.Contains(t, cookie, "HttpOnly")
		require.Contains(t, cookie, "SameSite=Strict")
		require.Equal(t, tc.secure, strings.Contains(cookie, "Secure"), cookie)
		require.NotContains(t, cookie, strings.TrimPrefix(e.token, "gr_"), "the token is sealed, never in clear")
	}
}

func TestSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	b := e.browser()
	p := b.get("/console/runs")
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.Equal(t, "/console/signin?next=%2Fconsole%2Fruns", p.Location)

	p = b.post("/console/signin", url.Values{"token": {"gr_nope"}})
	require.Equal(t, http.StatusUnauthorized, p.Status)
	require.Contains(t, p.Body, "not valid")

	p = b.post("/console/signin", url.Values{"token": {e.token}}, "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, p.Status, "login CSRF: another site cannot sign a person in")
	require.Empty(t, p.Header.Get("Set-Cookie"))

	p = b.post("/console/signin", url.Values{"token": {e.token}, "next": {"//evil.example/x"}})
	require.Equal(t, "/console/runs", p.Location, "no redirect off the site")
	for _, next := range []string{"/\t/evil.example/x", "/\n/evil.example", "/\\evil.example", "https://evil.example", "/\x7f/evil.example"} {
		p = b.post("/console/signin", url.Values{"token": {e.token}, "next": {next}})
		require.Equal(t, "/console/runs", p.Location, "no redirect off the site (browsers drop tabs and newlines): %q", next)
	}
	require.Equal(t, http.StatusOK, b.get("/console/runs").Status)

	forged := e.browser()
	u, _ := url.Parse(e.srv.URL)
	forged.client.Jar.SetCookies(u, []*http.Cookie{{Name: "gorunner_session", Value: "AAAA" + strings.Repeat("B", 80)}})
	require.Equal(t, http.StatusSeeOther, forged.get("/console/runs").Status, "a forged cookie is no session")

	tok, secret, err := e.auth.Issue(context.Background(), auth.IssueParams{Name: "short-lived", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	other := e.browser()
	other.signIn(secret)
	require.Equal(t, http.StatusOK, other.get("/console/runs").Status)
	require.NoError(t, e.auth.Revoke(context.Background(), tok.ID))
	require.Equal(t, http.StatusSeeOther, other.get("/console/runs").Status, "revoking the token ends its sessions")

	csrf := b.csrf("/console/runs")
	p = b.post("/console/signout", url.Values{"csrf": {csrf}})
	require.Equal(t, "/console/signin", p.Location)
	require.Equal(t, http.StatusSeeOther, b.get("/console/runs").Status, "signed out")
}

// TestDraftProblemsAtTheirPointers: the editor shows every validation problem at its JSON
// pointer and keeps the text as typed; the draft is unchanged.
func TestDraftProblemsAtTheirPointers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.createWorkflow(greetYAML)
	b := e.browser()
	b.signIn(e.token)
	csrf := b.csrf("/console/workflows/greet")
	bad := "name: greet\ninput: {type: object}\nsteps:\n  - id: hello\n    http: {url: 42}\n"
	p := b.post("/console/workflows/greet", url.Values{"csrf": {csrf}, "rev": {"1"}, "definition": {bad}})
	require.Equal(t, http.StatusBadRequest, p.Status)
	require.Contains(t, p.Body, `<code class="pointer">/steps/0/http/url</code>`)
	require.Contains(t, p.Body, "http: {url: 42}", "the text as typed")
	wf, err := e.catalog.Get(context.Background(), "greet")
	require.NoError(t, err)
	require.Equal(t, 1, wf.Rev)

	p = b.post("/console/workflows/greet", url.Values{"csrf": {csrf}, "rev": {"1"}, "definition": {strings.Replace(greetYAML, "Hello", "Hi", 1)}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	wf, err = e.catalog.Get(context.Background(), "greet")
	require.NoError(t, err)
	require.Equal(t, 2, wf.Rev)
}

// TestMountedBesideTheAPI: the console owns / and /console/…; every other path is still
// the API's, with its JSON answers.
func TestMountedBesideTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	b := e.browser()
	tests := []struct {
		path        string
		status      int
		contentType string
	}{
		{"/", http.StatusSeeOther, "text/html"},
		{"/console", http.StatusSeeOther, "text/html"},
		{"/console/signin", http.StatusOK, "text/html"},
		{"/console/static/console.js", http.StatusOK, "text/javascript"},
		{"/console/nope", http.StatusNotFound, "text/html"},
		{"/api/workflows", http.StatusUnauthorized, "application/json"},
		{"/api/openapi.json", http.StatusOK, "application/json"},
		{"/healthz", http.StatusOK, ""},
		{"/nope", http.StatusNotFound, "application/json"},
	}
	for _, tc := range tests {
		p := b.get(tc.path)
		require.Equal(t, tc.status, p.Status, tc.path)
		require.True(t, strings.HasPrefix(p.Header.Get("Content-Type"), tc.contentType), "%s: %s", tc.path, p.Header.Get("Content-Type"))
	}
	b.signIn(e.token)
	p := b.get("/console/nope")
	require.Equal(t, http.StatusNotFound, p.Status)
	require.Contains(t, p.Body, "There is no console page")
}

// TestFormOriginIsBaseURL performs the attack on the origin check behind a proxy: a forged
// Host header with an Origin to match it. Forms are accepted from the configured public
// origin alone, whatever Host says; nothing is signed in or published otherwise.
func TestFormOriginIsBaseURL(t *testing.T) {
	t.Parallel()
	const public = "http://runner.example"
	e := newEnv(t, public+"/")
	e.createWorkflow(greetYAML)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.signIn(e.token).Status)
	csrf := b.csrf("/console/workflows/greet")

	refused := []struct {
		name   string
		header []string
	}{
		{"forged Host, matching Origin", []string{"Host", "evil.example", "Origin", "http://evil.example"}},
		{"the address served, not the public one", []string{"Origin", e.srv.URL}},
		{"the public host, another scheme", []string{"Origin", "https://runner.example"}},
		{"an opaque origin", []string{"Origin", "null"}},
	}
	for _, tc := range refused {
		p := b.post("/console/signin", url.Values{"token": {e.token}}, tc.header...)
		require.Equal(t, http.StatusForbidden, p.Status, tc.name)
		require.Contains(t, p.Body, "at "+public, "the page says where the console is")
		require.Empty(t, p.Header.Get("Set-Cookie"), tc.name)
		p = b.post("/console/workflows/greet/publish", url.Values{"csrf": {csrf}}, tc.header...)
		require.Equal(t, http.StatusForbidden, p.Status, tc.name)
		wf, err := e.catalog.Get(context.Background(), "greet")
		require.NoError(t, err)
		require.Zero(t, wf.LatestVersion, "%s: nothing was published", tc.name)
	}

	for _, origin := range []string{public, "HTTP://Runner.Example:80"} {
		require.Equal(t, http.StatusSeeOther, b.post("/console/signin", url.Values{"token": {e.token}}, "Origin", origin).Status, origin)
	}
	p := b.post("/console/workflows/greet/publish", url.Values{"csrf": {b.csrf("/console/workflows/greet")}}, "Host", "evil.example", "Origin", public)
	require.Equal(t, http.StatusSeeOther, p.Status, "the public origin is accepted whatever Host the proxy sends")
}
