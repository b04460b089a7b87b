package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/testclock"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/oauth/oauthtest"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/stack/stacktest"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

const greetDef = `{"name":"greet","title":"Greet","description":"Says hello.",
	"input":{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"]},
	"steps":[{"id":"hello","set":"hello ${{ input.name }}"}]}`

// env is GoRunner serving the API, /mcp and the authorization server on loopback over a
// fresh SQLite store, with an admin token.
type env struct {
	t       *testing.T
	url     string // the public URL
	store   *sqlitestore.Store
	auth    *auth.Service
	oauth   *oauth.Server
	clock   *testclock.Clock
	admin   string // an admin token
	clients *httptest.Server
	docs    map[string]string // client metadata documents by path
	caching map[string]string // their Cache-Control header by path
	fetches map[string]int    // how often each was fetched
	docsMu  sync.Mutex
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the authorization server's config changed by tune.
func newEnvWith(t *testing.T, tune func(*oauth.Config)) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, clock: testclock.New(time.Now()), docs: map[string]string{}, caching: map[string]string{},
		fetches: map[string]int{}}
	s := stacktest.New(t, stacktest.Config{Now: e.clock.Now, Runner: runner.Config{PollInterval: 20 * time.Millisecond}})
	st, cat, eng := s.Store, s.Catalog, s.Engine
	e.store, e.auth, e.admin = st, s.Auth, s.AdminToken
	w, err := cat.Create(ctx, []byte(greetDef))
	require.NoError(t, err)
	_, _, err = cat.Publish(ctx, w.ID, auth.Local())
	require.NoError(t, err)
	m, err := mcpserver.New(mcpserver.Deps{Catalog: cat, Engine: eng, Idempotency: s.Idempotency}, nil)
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Stop(context.Background()) })

	srv := httptest.NewUnstartedServer(nil)
	e.url = "http://" + srv.Listener.Addr().String()
	cfg := &oauth.Config{PublicURL: e.url, Now: e.clock.Now}
	if tune != nil {
		tune(cfg)
	}
	e.oauth, err = oauth.New(st, e.auth, cfg)
	require.NoError(t, err)
	a, err := api.New(api.Deps{Catalog: cat, Auth: e.auth, Engine: eng, Idempotency: s.Idempotency, OAuth: e.oauth},
		&api.Config{MCP: m.HTTPHandler(), PublicURL: e.url,
			Public: mcpserver.MetadataHandlers(e.url, &mcpserver.AuthorizationServer{Issuer: e.oauth.Issuer(), Scopes: oauth.ResourceScopes()})})
	require.NoError(t, err)
	srv.Config.Handler = a
	srv.Start()
	t.Cleanup(srv.Close)

	e.clients = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.docsMu.Lock()
		doc, ok := e.docs[r.URL.Path]
		e.fetches[r.URL.Path]++
		caching := e.caching[r.URL.Path]
		e.docsMu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		if caching != "" {
			w.Header().Set("Cache-Control", caching)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, doc)
	}))
	t.Cleanup(e.clients.Close)
	return e
}

// redirectURI is where test clients say they want the person back; nothing serves it,
// the test reads the Location header instead.
const redirectURI = "http://127.0.0.1:1/callback"

// documentClient serves a Client ID Metadata Document on loopback, for both grant types,
// and returns its URL.
func (e *env) documentClient(name string, redirects ...string) string {
	return e.documentClientWith(name, map[string]any{"grant_types": []string{"authorization_code", "refresh_token"}}, redirects...)
}

// documentClientWith serves a Client ID Metadata Document with fields besides its ID,
// name and redirect URIs.
func (e *env) documentClientWith(name string, fields map[string]any, redirects ...string) string {
	if len(redirects) == 0 {
		redirects = []string{redirectURI}
	}
	id := e.clients.URL + "/" + strings.ReplaceAll(strings.ToLower(name), " ", "-") + ".json"
	doc := map[string]any{"client_id": id, "client_name": name, "redirect_uris": redirects,
		"token_endpoint_auth_method": "none"}
	for k, v := range fields {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	require.NoError(e.t, err)
	e.serveDocument(strings.TrimPrefix(id, e.clients.URL), string(b))
	return id
}

func (e *env) serveDocument(path, doc string) {
	e.docsMu.Lock()
	defer e.docsMu.Unlock()
	e.docs[path] = doc
}

// config is an x/oauth2 client of e for clientID.
func (e *env) config(clientID string, scopes ...string) *oauth2.Config {
	return &oauth2.Config{ClientID: clientID, RedirectURL: redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.url + oauth.AuthorizePath, TokenURL: e.url + oauth.TokenPath,
			AuthStyle: oauth2.AuthStyleInParams}}
}

// consent is the authorize page as the person sees it.
type consent = oauthtest.Page

func (e *env) browser() *http.Client { return oauthtest.Browser(e.t) }

func (e *env) open(b *http.Client, authURL string) consent { return oauthtest.Open(e.t, b, authURL) }

func (e *env) submit(b *http.Client, c consent, credential, action string, scopes ...string) consent {
	return oauthtest.Submit(e.t, b, c, credential, action, scopes...)
}

// callback reads the redirect back to the client.
func callback(t *testing.T, c consent) url.Values {
	t.Helper()
	to, q := oauthtest.Callback(t, c)
	require.Equal(t, redirectURI, to)
	return q
}

// authorize runs the browser part of the flow: it approves scopes (all asked when none
// given) with credential and returns the code.
func (e *env) authorize(conf *oauth2.Config, verifier, credential string, scopes ...string) string {
	e.t.Helper()
	b := e.browser()
	page := e.open(b, conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", e.url+"/mcp")))
	require.Equal(e.t, http.StatusOK, page.Status, page.Body)
	if scopes == nil {
		scopes = page.Scopes
	}
	q := callback(e.t, e.submit(b, page, credential, "approve", scopes...))
	require.Equal(e.t, "st4te", q.Get("state"))
	require.Equal(e.t, e.url, q.Get("iss"))
	require.NotEmpty(e.t, q.Get("code"))
	return q.Get("code")
}

// mcpTools opens an MCP session at /mcp with an HTTP client, as any client does
// (initialize, initialized, tools/list), and lists its tools.
func (e *env) mcpTools(hc *http.Client) ([]string, error) {
	_, session, err := e.mcpPost(hc, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{},"clientInfo":{"name":"oauth-test","version":"1"}}}`)
	if err != nil {
		return nil, err
	}
	if _, _, err := e.mcpPost(hc, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, err
	}
	raw, _, err := e.mcpPost(hc, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if err != nil {
		return nil, err
	}
	var msg struct {
		Result struct{ Tools []struct{ Name string } }
		Error  json.RawMessage
	}
	if err := json.Unmarshal(raw, &msg); err != nil || msg.Error != nil {
		return nil, fmt.Errorf("tools/list answered %s (%v)", raw, err)
	}
	var names []string
	for _, tool := range msg.Result.Tools {
		names = append(names, tool.Name)
	}
	return names, nil
}

// mcpPost posts one JSON-RPC message to /mcp in session (none for initialize) and returns
// the answer's message, read from its SSE data line when the server streams, and the
// session ID the server names.
func (e *env) mcpPost(hc *http.Client, session, body string) ([]byte, string, error) {
	req, err := http.NewRequest(http.MethodPost, e.url+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, "", err
	}
	if res.StatusCode >= 300 {
		return nil, "", fmt.Errorf("POST /mcp: %s: %s", res.Status, raw)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(raw)) {
			if data, ok := strings.CutPrefix(line, "data:"); ok {
				return []byte(strings.TrimSpace(data)), res.Header.Get("Mcp-Session-Id"), nil
			}
		}
	}
	return raw, res.Header.Get("Mcp-Session-Id"), nil
}

// bearerClient sends token on every request.
func bearerClient(token string) *http.Client {
	return oauth2.NewClient(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token}))
}

// status answers the status of method url with token.
func status(t *testing.T, method, u, token string) int {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// postForm posts a form to the server and decodes the JSON answer.
func (e *env) postForm(path string, form url.Values) (int, map[string]any) {
	e.t.Helper()
	resp, err := http.PostForm(e.url+path, form)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var out map[string]any
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	if len(b) > 0 {
		require.NoError(e.t, json.Unmarshal(b, &out), string(b))
	}
	return resp.StatusCode, out
}

// newRedirectServer answers every request with a redirect to target.
func newRedirectServer(target string) *httptest.Server {
	return httptest.NewServer(http.RedirectHandler(target, http.StatusFound))
}

// newPublicOnly serves s alone on loopback (as if behind a proxy at its public URL) and
// returns the local address.
func newPublicOnly(t *testing.T, s *oauth.Server) string {
	t.Helper()
	mux := http.NewServeMux()
	for path, h := range s.Handlers() {
		mux.Handle(path, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
