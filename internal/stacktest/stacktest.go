// Package stacktest builds GoRunner's services (catalog, auth, idempotency, engine) over a
// fresh SQLite store, wired as `gorunner serve` wires them, for the tests of the packages
// that serve them (api, console, oauth): each adds its own front on top.
package stacktest

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// Config varies a Stack; the zero value is a new SQLite file and default services.
type Config struct {
	Path    string                          // the SQLite file (default: a new one); the same path twice is a restart, or a second process
	Catalog catalog.Config                  // SecretKey defaults to 32 bytes of 9
	Runner  runner.Config                   // the engine's settings
	Runs    func(runner.Store) runner.Store // wraps the engine's store (default: the store itself)
	Now     func() time.Time                // the auth service's clock (default: time.Now)
	// Open opens the store at Path (default: sqlitestore.Open), for a store opened with
	// settings of its own tests.
	Open func(ctx context.Context, path string) (*sqlitestore.Store, error)
}

// Stack is the services over one store, with an admin token.
type Stack struct {
	Store       *sqlitestore.Store
	Catalog     *catalog.Service
	Auth        *auth.Service
	Idempotency *idempotency.Service
	Engine      *runner.Engine
	// AdminToken is the secret of a token with every scope.
	AdminToken string
	// SecretKey is the catalog's key (Config.Catalog.SecretKey), for a console's sessions.
	SecretKey []byte
	// Stop stops the engine and closes the store, as a process exit would; it runs once,
	// at the end of the test at the latest.
	Stop func()
}

// New builds and starts a Stack for t.
func New(t testing.TB, cfg Config) *Stack {
	t.Helper()
	ctx := context.Background()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "gorunner.db")
	}
	if cfg.Catalog.SecretKey == nil {
		cfg.Catalog.SecretKey = bytes.Repeat([]byte{9}, 32)
	}
	if cfg.Open == nil {
		cfg.Open = sqlitestore.Open
	}
	st, err := cfg.Open(ctx, cfg.Path)
	require.NoError(t, err)
	s := &Stack{Store: st, SecretKey: cfg.Catalog.SecretKey}
	s.Auth, err = auth.New(st, &auth.Config{Now: cfg.Now})
	require.NoError(t, err)
	s.Catalog, err = catalog.New(st, &cfg.Catalog)
	require.NoError(t, err)
	_, s.AdminToken, err = s.Auth.Issue(ctx, auth.IssueParams{Name: "admin", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	// A bus of its own over the file's change log, as a process has: a second Stack on the
	// same path hears this one's runs and keys as another process would.
	bus := events.New(st.Events(), nil)
	require.NoError(t, bus.Start(ctx))
	if cfg.Runner.Events == nil {
		cfg.Runner.Events = bus
	}
	if cfg.Runner.SecretKey == nil { // as a process's: the data directory's secret.key
		cfg.Runner.SecretKey = cfg.Catalog.SecretKey
	}
	s.Idempotency, err = idempotency.New(st, &idempotency.Config{Events: bus})
	require.NoError(t, err)
	var runs runner.Store = st
	if cfg.Runs != nil {
		runs = cfg.Runs(st)
	}
	s.Engine, err = runner.New(runs, s.Catalog, s.Catalog, &cfg.Runner)
	require.NoError(t, err)
	require.NoError(t, s.Engine.Start(ctx))
	s.Stop = sync.OnceFunc(func() {
		_ = s.Engine.Stop(context.Background())
		_ = bus.Stop(context.Background())
		st.Close()
	})
	t.Cleanup(s.Stop)
	return s
}

// Clock is a test's settable time, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
