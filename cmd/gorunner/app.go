package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/examples"
	"github.com/gorunner/gorunner/stack"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/pgstore"
	"github.com/gorunner/gorunner/store/redisstore"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// app is what every command that works on the store shares.
type app struct {
	log     *slog.Logger
	dataDir string
	store   store.Backend
	// stack is the services over the store (stack.New), of which catalog and auth are
	// what every command uses.
	stack   *stack.Stack
	catalog *catalog.Service
	auth    *auth.Service
	// secretKey is <data-dir>/secret.key: it keys every sealed or signed value (connection
	// secrets, webhook tokens, kept answers carrying them, console sessions, run list
	// cursors, MCP requestStates).
	secretKey []byte
	// transport carries the events of the processes sharing the store (run, key,
	// catalog, due): Redis pub/sub, PostgreSQL's LISTEN/NOTIFY, or the SQLite file's change log.
	transport events.Transport
}

// openApp opens the data directory and the store named by the flags, and builds the
// services of a command, which runs no events bus.
func openApp(ctx context.Context, g *globals) (*app, error) {
	a, err := openData(ctx, g)
	if err != nil {
		return nil, err
	}
	if err := a.openServices(&stack.Config{Logger: a.log}); err != nil {
		a.store.Close()
		return nil, err
	}
	return a, nil
}

// openData opens the data directory and the store named by the flags; the services are
// built by openServices, once the caller has what they need.
func openData(ctx context.Context, g *globals) (*app, error) {
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(g.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", g.dataDir, err)
	}
	a := &app{log: log, dataDir: g.dataDir}
	if err := a.openStore(ctx, g); err != nil {
		return nil, err
	}
	return a, nil
}

// openServices reads the data directory's secret key and builds the services over a's
// store with stack.New, cfg keyed with it and the catalog given the example templates. A
// command never starts them: its stack's bus tells no other process (see tell).
func (a *app) openServices(cfg *stack.Config) error {
	key, err := secretKey(a.dataDir)
	if err != nil {
		return err
	}
	cfg.SecretKey, cfg.Catalog.Templates = key, examples.Workflows()
	s, err := stack.New(a.store, cfg)
	if err != nil {
		return err
	}
	a.stack, a.catalog, a.auth, a.secretKey = s, s.Catalog, s.Auth, key
	return nil
}

// openStore opens the store --store names: Redis, PostgreSQL, or the SQLite file (by
// default the one in the data directory).
func (a *app) openStore(ctx context.Context, g *globals) error {
	path, err := storeURL(g)
	if err != nil {
		return err
	}
	a.store, err = openStoreAt(ctx, path)
	if err != nil {
		return err
	}
	a.transport = a.store.Events()
	return nil
}

// storeURL is the store --store names: the URL of Redis or PostgreSQL, or the SQLite file's
// path (by default the one in the data directory).
func storeURL(g *globals) (string, error) {
	if strings.HasPrefix(g.store, "redis://") || isPostgres(g.store) {
		return g.store, nil
	}
	return sqlitePath(g)
}

// openStoreAt opens the store at url: a Redis or PostgreSQL URL, else a SQLite file's path.
func openStoreAt(ctx context.Context, url string) (store.Backend, error) {
	switch {
	case strings.HasPrefix(url, "redis://"):
		rs, err := redisstore.Open(ctx, url, nil)
		if err != nil {
			return nil, fmt.Errorf("opening store %s: %w", redactURL(url), err)
		}
		return rs, nil
	case isPostgres(url):
		ps, err := pgstore.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("opening store %s: %w", redactURL(url), err)
		}
		return ps, nil
	}
	ss, err := sqlitestore.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", url, err)
	}
	return ss, nil
}

// redactURL hides a password in a store URL meant for a message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the store"
	}
	return u.Redacted()
}

func (a *app) Close() error { return a.store.Close() }

// cliOrigin is the events.Message origin of a command: no Bus has it, so every
// process's Bus delivers what a command tells.
const cliOrigin = "cli"

// tellTimeout bounds tell: past auth.TokenCacheFor a notice of events.Tokens tells the
// servers nothing they have not done by themselves.
const tellTimeout = auth.TokenCacheFor

// tell sends topics to the processes sharing the store (Redis pub/sub, or the SQLite
// file's change log) and returns once the transport has taken them. A command runs no
// events.Bus: one would send asynchronously, and the command would exit first. Failing
// is logged, not returned: the change is made, and the servers learn of it by themselves
// within their bound (auth.TokenCacheFor for events.Tokens).
func (a *app) tell(ctx context.Context, topics ...events.Topic) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tellTimeout)
	defer cancel()
	if err := a.transport.Publish(ctx, events.Message{Origin: cliOrigin, Topics: topics}); err != nil {
		a.log.Warn("telling the running servers failed; they act on the change within their own bound",
			"topics", topics, "err", err)
	}
}

// check refuses the global flags a usage error can be made in (the log settings, the form
// of --store) without opening anything.
func (g *globals) check() error {
	if _, err := g.logger(); err != nil {
		return err
	}
	if strings.HasPrefix(g.store, "redis://") || isPostgres(g.store) {
		return nil
	}
	_, err := sqlitePath(g)
	return err
}

// isPostgres reports whether --store names a PostgreSQL database: postgres:// or
// postgresql://, as libpq spells its URLs.
func isPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// sqlitePath reads --store: empty means the embedded default in the data directory.
func sqlitePath(g *globals) (string, error) {
	switch {
	case g.store == "":
		return filepath.Join(g.dataDir, "gorunner.db"), nil
	case strings.HasPrefix(g.store, "sqlite:"):
		p := strings.TrimPrefix(g.store, "sqlite:")
		if p == "" {
			return "", usageError(errors.New("--store sqlite: needs a path, e.g. sqlite:./.gorunner/gorunner.db"))
		}
		return p, nil
	default:
		return "", usageError(fmt.Errorf("--store %q: use sqlite:PATH, redis://HOST:PORT/DB or postgres://USER@HOST:PORT/DB", g.store))
	}
}

// secretKey reads <data-dir>/secret.key, the key of every sealed or signed value (see
// app.secretKey), creating it (mode 0600) on first use.
func secretKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, "secret.key")
	key, err := os.ReadFile(path)
	if err == nil {
		if len(key) != 32 {
			return nil, fmt.Errorf("%s must hold exactly 32 bytes", path)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("making %s private: %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return secretKey(dataDir) // another process made it first
	}
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return key, f.Close()
}

// ensureAdminToken creates the admin token on a store with no token and writes it to
// <data-dir>/admin-token (mode 0600). It prints the token to out only when out is a
// terminal, so that it never lands in a log file; the log says where the file is.
func (a *app) ensureAdminToken(ctx context.Context, out io.Writer) error {
	n, err := a.auth.Count(ctx)
	if err != nil || n > 0 {
		return err
	}
	_, secret, err := a.auth.Issue(ctx, auth.IssueParams{Name: "admin", Scopes: auth.AdminScopes()})
	if err != nil {
		return err
	}
	path := filepath.Join(a.dataDir, "admin-token")
	if err := writePrivate(path, []byte(secret+"\n")); err != nil {
		return err
	}
	a.log.Info("admin token created", "file", path)
	if isTerminal(out) {
		fmt.Fprintf(out, "Admin token (shown once, also written to %s):\n%s\n", path, secret)
	}
	return nil
}

// writePrivate writes data to path with mode 0600, whatever the umask or the mode an
// existing file had.
func writePrivate(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("making %s private: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
