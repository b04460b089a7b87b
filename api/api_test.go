package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/examples"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/stack/stacktest"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// env is one running API over a fresh SQLite store, with an admin token.
type env struct {
	t       testing.TB
	srv     *httptest.Server
	token   string
	store   *sqlitestore.Store
	auth    *auth.Service
	catalog *catalog.Service
	stop    func() // stops the server, its engine and its store, as a process exit would
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvConfig(t, envConfig{})
}

// newEnvAt is newEnv over the SQLite file at path: a second env on one path is the server
// restarted, or a second process.
func newEnvAt(t testing.TB, path string) *env {
	t.Helper()
	return newEnvConfig(t, envConfig{path: path})
}

// newEnvWith is newEnvAt with the API settings of cfg (Ready and PublicURL are filled in).
func newEnvWith(t testing.TB, path string, cfg api.Config) *env {
	t.Helper()
	return newEnvConfig(t, envConfig{path: path, api: cfg})
}

// envConfig varies the server newEnvConfig starts; the zero value is newEnv's.
type envConfig struct {
	path   string                          // the SQLite file (default: a new one)
	api    api.Config                      // Ready and PublicURL are filled in
	kinds  map[string]runner.StepHandler   // custom step kinds, registered with the catalog too
	runs   func(runner.Store) runner.Store // wraps the engine's store
	runner runner.Config                   // Kinds is set from kinds
	limits *api.HTTPLimits
	now    func() time.Time // the auth service's clock (default: time.Now)
}

func newEnvConfig(t testing.TB, c envConfig) *env {
	t.Helper()
	custom := map[string]bool{}
	for k := range c.kinds {
		custom[k] = true
	}
	c.runner.Kinds = c.kinds
	st := stacktest.New(t, stacktest.Config{Path: c.path, Runner: c.runner, Runs: c.runs, Now: c.now,
		Catalog: catalog.Config{Templates: examples.Workflows(), CustomKinds: custom}})
	srv := httptest.NewUnstartedServer(nil)
	cfg := c.api
	cfg.Ready, cfg.PublicURL = st.Store.Ping, "http://"+srv.Listener.Addr().String()
	s, err := api.New(api.Deps{Catalog: st.Catalog, Auth: st.Auth, Engine: st.Engine, Idempotency: st.Idempotency}, &cfg)
	require.NoError(t, err)
	srv.Config = api.NewHTTPServer(s, c.limits)
	srv.Start()
	stop := sync.OnceFunc(func() {
		srv.Close()
		st.Stop()
	})
	t.Cleanup(stop)
	return &env{t: t, srv: srv, token: st.AdminToken, store: st.Store, auth: st.Auth, catalog: st.Catalog, stop: stop}
}

// answer is one HTTP answer, decoded.
type answer struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

func (a answer) data() map[string]any {
	d, _ := a.Body["data"].(map[string]any)
	return d
}

func (a answer) errorCode() string {
	e, _ := a.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// do sends a request with the admin token; body may be a string, []byte or a value to marshal.
func (e *env) do(method, path string, body any, header ...string) answer {
	e.t.Helper()
	return e.doAs(e.token, method, path, body, header...)
}

func (e *env) doAs(token, method, path string, body any, header ...string) answer {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	res, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	a := answer{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		require.NoError(e.t, json.Unmarshal(raw, &a.Body), string(raw))
	}
	return a
}

func greetDef(name string) map[string]any {
	return map[string]any{
		"name":  name,
		"title": "Greet",
		"input": map[string]any{
			"type":       "object",
			"properties": map[string]any{"name": map[string]any{"type": "string"}},
			"required":   []any{"name"},
		},
		"steps": []any{map[string]any{"id": "greet", "set": map[string]any{"message": "Hello, ${{ input.name }}!"}}},
	}
}

// create makes a workflow and returns its data.
func (e *env) create(name string) map[string]any {
	e.t.Helper()
	a := e.do("POST", "/api/workflows", greetDef(name))
	require.Equal(e.t, http.StatusCreated, a.Status, string(a.Raw))
	return a.data()
}

func TestStoreOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Equal(t, http.StatusOK, e.do("GET", "/api/workflows", nil).Status)
	require.NoError(t, e.store.Close())
	for _, path := range []string{"/api/workflows", "/api/runs"} {
		a := e.do("GET", path, nil)
		require.Equal(t, http.StatusServiceUnavailable, a.Status, string(a.Raw))
		require.Equal(t, "UNAVAILABLE", a.errorCode())
		require.Equal(t, "1", a.Header.Get("Retry-After"))
	}
	require.Equal(t, http.StatusServiceUnavailable, e.doAs("", "GET", "/readyz", nil).Status)
}
