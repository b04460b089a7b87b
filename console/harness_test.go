package console_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/console"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/stack/stacktest"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// env is a whole GoRunner HTTP face (API and console) over a fresh SQLite store.
type env struct {
	t       testing.TB
	srv     *httptest.Server
	token   string
	catalog *catalog.Service
	engine  *runner.Engine
	auth    *auth.Service
	idem    *idempotency.Service
	store   *sqlitestore.Store
	oauth   *oauth.Server // nil unless built by newOAuthEnv
}

func newEnv(t testing.TB, baseURL string) *env {
	t.Helper()
	return newEnvWith(t, console.Config{BaseURL: baseURL})
}

// newEnvWith builds the env with the console settings of cfg (BaseURL, Now).
func newEnvWith(t testing.TB, cfg console.Config) *env {
	t.Helper()
	return buildEnv(t, cfg, false, nil)
}

// newOAuthEnv builds the env with OAuth on, as `gorunner serve --public-url` does.
func newOAuthEnv(t testing.TB) *env {
	t.Helper()
	return buildEnv(t, console.Config{}, true, nil)
}

// newEnvOver is newEnv whose engine works on runs(store) instead of the store.
func newEnvOver(t testing.TB, runs func(runner.Store) runner.Store) *env {
	t.Helper()
	return buildEnv(t, console.Config{}, false, runs)
}

func buildEnv(t testing.TB, cfg console.Config, withOAuth bool, runs func(runner.Store) runner.Store) *env {
	t.Helper()
	egress, err := runner.NewEgressPolicy("127.0.0.1") // http steps of the tests call local servers
	require.NoError(t, err)
	s := stacktest.New(t, stacktest.Config{Runs: runs, Runner: runner.Config{Egress: egress}})
	srv := httptest.NewUnstartedServer(nil)
	if cfg.BaseURL == "" {
		cfg.BaseURL = "http://" + srv.Listener.Addr().String()
	}
	deps := console.Deps{Catalog: s.Catalog, Auth: s.Auth, Engine: s.Engine, Idempotency: s.Idempotency}
	var web *console.Console
	if withOAuth {
		deps.OAuth, err = oauth.New(s.Store, s.Auth, &oauth.Config{PublicURL: cfg.BaseURL})
		require.NoError(t, err)
	}
	cfg.SecretKey = s.SecretKey
	web, err = console.New(deps, &cfg)
	require.NoError(t, err)
	a, err := api.New(api.Deps{Catalog: s.Catalog, Auth: s.Auth, Engine: s.Engine, Idempotency: s.Idempotency, OAuth: deps.OAuth},
		&api.Config{Console: web, PublicURL: cfg.BaseURL})
	require.NoError(t, err)
	srv.Config.Handler = a
	srv.Start()
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, token: s.AdminToken, catalog: s.Catalog, engine: s.Engine, auth: s.Auth,
		idem: s.Idempotency, store: s.Store, oauth: deps.OAuth}
}

// browser is a plain HTTP client with a cookie jar that does not follow redirects.
type browser struct {
	e      *env
	client *http.Client
}

func (e *env) browser() *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(e.t, err)
	return &browser{e: e, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// page is one answer: status, Location and body.
type page struct {
	Status   int
	Location string
	Body     string
	Header   http.Header
}

func (b *browser) do(req *http.Request) page {
	b.e.t.Helper()
	res, err := b.client.Do(req)
	require.NoError(b.e.t, err)
	defer res.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(res.Body)
	require.NoError(b.e.t, err)
	return page{Status: res.StatusCode, Location: res.Header.Get("Location"), Body: buf.String(), Header: res.Header}
}

func (b *browser) get(path string) page {
	b.e.t.Helper()
	req, err := http.NewRequest("GET", b.e.srv.URL+path, nil)
	require.NoError(b.e.t, err)
	return b.do(req)
}

// post sends a form; header pairs follow the form ("Host" sets the Host header).
func (b *browser) post(path string, form url.Values, header ...string) page {
	b.e.t.Helper()
	req, err := http.NewRequest("POST", b.e.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(b.e.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
		for _, c := range b.client.Jar.Cookies(req.URL) { // the client would look them up under host
			req.AddCookie(c)
		}
	}
	return b.do(req)
}

func (b *browser) signIn(token string) page {
	b.e.t.Helper()
	return b.post("/console/signin", url.Values{"token": {token}, "next": {"/console/workflows"}})
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token off a page's forms.
func (b *browser) csrf(path string) string {
	b.e.t.Helper()
	p := b.get(path)
	require.Equal(b.e.t, http.StatusOK, p.Status, p.Body)
	m := csrfField.FindStringSubmatch(p.Body)
	require.NotNil(b.e.t, m, "no CSRF token on "+path)
	return m[1]
}

// createWorkflow makes a workflow from a JSON or YAML document.
func (e *env) createWorkflow(doc string) *catalog.Workflow {
	e.t.Helper()
	wf, err := e.catalog.Create(context.Background(), []byte(doc))
	require.NoError(e.t, err)
	return wf
}
