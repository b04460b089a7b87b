// Package stacktest builds GoRunner's services over a fresh SQLite store with stack.New, as
// `gorunner serve` and `gorunner mcp` build them, for the tests of the packages that serve
// them (api, console, mcpserver, oauth, cmd/gorunner): each adds its own front on top.
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
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/stack"
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
	// SecretKey is the stack's key (Config.Catalog.SecretKey), for a console's sessions.
	SecretKey []byte
	// Stop stops the services and closes the store, as a process exit would; it runs once,
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
	services, err := stack.New(st, &stack.Config{SecretKey: cfg.Catalog.SecretKey, Catalog: cfg.Catalog,
		Auth: auth.Config{Now: cfg.Now}, Runner: cfg.Runner, Runs: cfg.Runs,
		Logger: cfg.Runner.Logger, Registerer: cfg.Runner.Registerer})
	require.NoError(t, err)
	require.NoError(t, services.Start(ctx))
	s := &Stack{Store: st, Catalog: services.Catalog, Auth: services.Auth, Idempotency: services.Idempotency,
		Engine: services.Engine, SecretKey: cfg.Catalog.SecretKey}
	s.Stop = sync.OnceFunc(func() {
		_ = services.Stop(context.Background())
		st.Close()
	})
	t.Cleanup(s.Stop)
	_, s.AdminToken, err = s.Auth.Issue(ctx, auth.IssueParams{Name: "admin", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	return s
}
