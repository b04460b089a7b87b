package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/pgstore"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
	"github.com/gorunner/gorunner/store/redisstore"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// fixture is GoRunner's API with /mcp mounted, over a fresh SQLite file.
type fixture struct {
	t       testing.TB
	dbPath  string
	catalog *catalog.Service
	engine  *runner.Engine
	mcp     *mcpserver.Server
	srv     *httptest.Server
	auth    *auth.Service
	token   string
	// principal is the ID of token's principal.
	principal string
	// local leaves the engine's bus without the store's transport: no other process's
	// change, nor the catalog version, reaches it.
	local bool
	// wrap, when set, wraps the store the engine and keyed replay work on (a test's
	// counting store).
	wrap func(*sqlitestore.Store) servedStore
	// reopen opens the fixture's store again, as another process does (twin); unset: the
	// SQLite file at dbPath.
	reopen func() sharedStore
	// redisURL and redisPrefix say where a Redis fixture's keys are, for a test that
	// changes them by hand.
	redisURL, redisPrefix string
}

// sharedStore is a store the fixture's processes share: SQLite or Redis.
type sharedStore interface {
	servedStore
	catalog.Store
	auth.Store
}

// transportOf is st's carrier of the events bus between processes.
func transportOf(st sharedStore) events.Transport {
	switch st := st.(type) {
	case *sqlitestore.Store:
		return st.Events()
	case *redisstore.Store:
		return st.Events()
	case *pgstore.Store:
		return st.Events()
	}
	panic(fmt.Sprintf("no events transport for %T", st))
}

// servedStore is what the engine and keyed replay work on, and what the MCP server checks
// the store's readiness by.
type servedStore interface {
	runner.Store
	idempotency.Store
	pinger
}

// pinger is a store's readiness check.
type pinger interface {
	Ping(ctx context.Context) error
}

// newFixture starts the API and the MCP server after publishing defs, so that their tools
// are there from the first tools/list.
func newFixture(t testing.TB, defs ...string) *fixture {
	t.Helper()
	return newFixtureConfig(t, &mcpserver.Config{PageSize: 2}, defs...)
}

// newFixtureConfig is newFixture with the MCP server configured by cfg.
func newFixtureConfig(t testing.TB, cfg *mcpserver.Config, defs ...string) *fixture {
	t.Helper()
	return newFixtureWith(t, cfg, &fixture{}, defs...)
}

// newLocalFixture is newFixture with a bus that hears nothing from the store (local): the
// catalog watcher never looks, so what the tool set shows can only come from the catalog's
// change hook or a lookup at call time.
func newLocalFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureWith(t, &mcpserver.Config{PageSize: 2}, &fixture{local: true})
}

// newFixtureWith is newFixture with the MCP server configured by cfg and the local and
// wrap options of opts.
func newFixtureWith(t testing.TB, cfg *mcpserver.Config, opts *fixture, defs ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, dbPath: filepath.Join(t.TempDir(), "gorunner.db"), local: opts.local, wrap: opts.wrap}
	st, err := sqlitestore.Open(ctx, f.dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	f.start(st, cfg, defs)
	return f
}

// start publishes defs on st, issues the fixture's admin token and serves f on st.
func (f *fixture) start(st sharedStore, cfg *mcpserver.Config, defs []string) {
	f.t.Helper()
	var err error
	f.catalog, err = catalog.New(st, nil)
	require.NoError(f.t, err)
	publishAll(f.t, f.catalog, defs)
	f.auth, err = auth.New(st, nil)
	require.NoError(f.t, err)
	tok, secret, err := f.auth.Issue(context.Background(), auth.IssueParams{Name: "agent", Scopes: auth.AdminScopes()})
	require.NoError(f.t, err)
	f.token, f.principal = secret, tok.ID
	f.serve(st, cfg)
}

// newRedisFixture is newFixture on a Redis store (GORUNNER_TEST_REDIS, under a fresh key
// prefix; the test skips without it).
func newRedisFixture(t testing.TB, defs ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	st, url, prefix := redistest.Open(t)
	f := &fixture{t: t, redisURL: url, redisPrefix: prefix, reopen: func() sharedStore {
		other, err := redisstore.Open(ctx, url, &redisstore.Config{Prefix: prefix})
		require.NoError(t, err)
		t.Cleanup(func() { other.Close() })
		return other
	}}
	f.start(st, &mcpserver.Config{PageSize: 2}, defs)
	return f
}

// newPostgresFixture is newFixture on a PostgreSQL store (GORUNNER_TEST_POSTGRES, in a
// fresh schema; the test skips without it).
func newPostgresFixture(t testing.TB, defs ...string) *fixture {
	t.Helper()
	st, schema := pgtest.Open(t)
	f := &fixture{t: t, reopen: func() sharedStore { return pgtest.OpenIn(t, schema) }}
	f.start(st, &mcpserver.Config{PageSize: 2}, defs)
	return f
}

// twin is another process on f's store: its own engine, MCP server and API.
func (f *fixture) twin() *fixture {
	f.t.Helper()
	ctx := context.Background()
	var st sharedStore
	if f.reopen != nil {
		st = f.reopen()
	} else {
		sq, err := sqlitestore.Open(ctx, f.dbPath)
		require.NoError(f.t, err)
		f.t.Cleanup(func() { sq.Close() })
		st = sq
	}
	g := &fixture{t: f.t, dbPath: f.dbPath, token: f.token, principal: f.principal, reopen: f.reopen}
	var err error
	g.auth, err = auth.New(st, nil)
	require.NoError(f.t, err)
	g.catalog, err = catalog.New(st, nil)
	require.NoError(f.t, err)
	g.serve(st, &mcpserver.Config{PageSize: 2})
	return g
}

// serve starts the engine, the MCP server and the API over st.
func (f *fixture) serve(st sharedStore, cfg *mcpserver.Config) {
	t := f.t
	ctx := context.Background()
	var transport events.Transport
	if !f.local {
		transport = transportOf(st)
	}
	bus := events.New(transport, nil)
	require.NoError(t, bus.Start(ctx))
	t.Cleanup(func() { _ = bus.Stop(context.Background()) })
	var engineStore servedStore = st
	if f.wrap != nil {
		engineStore = f.wrap(st.(*sqlitestore.Store)) // wrap is for SQLite fixtures
	}
	idem, err := idempotency.New(engineStore, &idempotency.Config{Events: bus})
	require.NoError(t, err)
	allow, err := runner.NewEgressPolicy("127.0.0.1")
	require.NoError(t, err)
	// Tests here count the reads and writes of runs that end in their admission; under -race
	// on a busy machine a run's steps may outlast the default admission bound (10 ms), which
	// runner's own tests cover (TestAdmissionWorkIsBounded). The benchmarks' 1-step run is
	// not held to it either way: the bound is checked before each step, and before the
	// first one hardly any time has passed.
	f.engine, err = runner.New(engineStore, f.catalog, f.catalog, &runner.Config{PollInterval: 20 * time.Millisecond, Egress: allow,
		Events: bus, AdmissionWork: time.Hour})
	require.NoError(t, err)
	require.NoError(t, f.engine.Start(ctx))
	t.Cleanup(func() { _ = f.engine.Stop(context.Background()) })
	f.srv = httptest.NewUnstartedServer(nil)
	publicURL := "http://" + f.srv.Listener.Addr().String()
	c := mcpserver.Config{}
	if cfg != nil {
		c = *cfg
	}
	c.PublicURL = publicURL
	f.mcp, err = mcpserver.New(mcpserver.Deps{Catalog: f.catalog, Engine: f.engine, Idempotency: idem, Ready: engineStore.Ping}, &c)
	require.NoError(t, err)
	require.NoError(t, f.mcp.Start(ctx))
	t.Cleanup(func() { _ = f.mcp.Stop(context.Background()) })
	a, err := api.New(api.Deps{Catalog: f.catalog, Auth: f.auth, Engine: f.engine, Idempotency: idem},
		&api.Config{MCP: f.mcp.HTTPHandler(), Public: mcpserver.MetadataHandlers(publicURL, nil), PublicURL: publicURL})
	require.NoError(t, err)
	f.srv.Config.Handler = a
	f.srv.Start()
	t.Cleanup(f.srv.Close)
}

// publish creates and publishes a workflow on c.
func publish(t testing.TB, c *catalog.Service, def string) {
	t.Helper()
	ctx := context.Background()
	w, err := c.Create(ctx, []byte(def))
	require.NoError(t, err)
	_, _, err = c.Publish(ctx, w.ID, auth.Local())
	require.NoError(t, err)
}

// publishAll publishes defs on c from a few goroutines: parsing overlaps the store's
// writes, which halves the setup of thousands of workflows.
func publishAll(t testing.TB, c *catalog.Service, defs []string) {
	t.Helper()
	const workers = 4
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			for i := w; i < len(defs) && errs[w] == nil; i += workers {
				var wf *catalog.Workflow
				if wf, errs[w] = c.Create(ctx, []byte(defs[i])); errs[w] == nil {
					_, _, errs[w] = c.Publish(ctx, wf.ID, auth.Local())
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// sessionEvents records what the server sent a client session on its own.
type sessionEvents struct {
	mu          sync.Mutex
	listChanged int
	progress    []string
	// changed receives a value per list_changed (coalesced while unread).
	changed chan struct{}
}

func (e *sessionEvents) changes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.listChanged
}

func (e *sessionEvents) progressMessages() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.progress...)
}

// connect opens an MCP session over streamable HTTP at /mcp+query.
func (f *fixture) connect(query string) (*mcp.ClientSession, *sessionEvents) {
	f.t.Helper()
	return f.connectAs(f.token, query)
}

// connectAs is connect with another token.
func (f *fixture) connectAs(token, query string) (*mcp.ClientSession, *sessionEvents) {
	f.t.Helper()
	ev := &sessionEvents{changed: make(chan struct{}, 1)}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			ev.mu.Lock()
			ev.listChanged++
			ev.mu.Unlock()
			select {
			case ev.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			ev.mu.Lock()
			ev.progress = append(ev.progress, r.Params.Message)
			ev.mu.Unlock()
		},
	})
	return f.connectClient(client, token, query), ev
}

// connectClient connects client with token over streamable HTTP at /mcp+query.
func (f *fixture) connectClient(client *mcp.Client, token, query string) *mcp.ClientSession {
	f.t.Helper()
	transport := &mcp.StreamableClientTransport{
		Endpoint:   f.srv.URL + "/mcp" + query,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}},
		MaxRetries: -1,
	}
	session, err := client.Connect(context.Background(), transport, nil)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = session.Close() })
	return session
}

// rest sends a REST request with the fixture's token.
func (f *fixture) rest(method, path string, body any, header http.Header) (*http.Response, map[string]any) {
	f.t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(f.t, err)
	req, err := http.NewRequest(method, f.srv.URL+path, bytes.NewReader(raw))
	require.NoError(f.t, err)
	req.Header = header.Clone()
	req.Header.Set("Authorization", "Bearer "+f.token)
	res, err := f.srv.Client().Do(req)
	require.NoError(f.t, err)
	defer res.Body.Close()
	var out map[string]any
	require.NoError(f.t, json.NewDecoder(res.Body).Decode(&out))
	return res, out
}

// call calls a tool and decodes its structured content.
func call(t testing.TB, s *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res, structured(t, res)
}

func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.StructuredContent == nil {
		return nil
	}
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

func text(res *mcp.CallToolResult) string {
	var b bytes.Buffer
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

const (
	greetDef = `{"name":"greet","title":"Greet","description":"Says hello.",
		"input":{"type":"object","properties":{"name":{"type":"string","minLength":1},"times":{"type":"integer"}},"required":["name"],"additionalProperties":false},
		"steps":[{"id":"hello","set":{"greeting":"hello ${{ input.name }}"}},{"id":"done","set":"${{ steps.hello.output.greeting }}"}]}`
	approveDef = `{"name":"approve","input":{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]},
		"steps":[{"id":"confirm","hook":{"token":"order:${{ input.orderId }}"}},{"id":"done","set":{"ok":"${{ steps.confirm.output.ok }}"}}]}`
	boomDef = `{"name":"boom","input":{"type":"object"},"steps":[{"id":"explode","fail":{"message":"kaboom","code":"BOOM"}}]}`
)

// runnerAll lists every run.
func runnerAll() runner.ListRunsParams { return runner.ListRunsParams{Limit: 100} }

// engineRun reads a run straight from the engine.
func (f *fixture) engineRun(t testing.TB, id string) *runner.Run {
	t.Helper()
	r, err := f.engine.Get(context.Background(), id)
	require.NoError(t, err)
	return r
}
