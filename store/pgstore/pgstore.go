// Package pgstore is GoRunner's PostgreSQL backend: one schema of one PostgreSQL database
// holds workflows, versions, connections, API tokens, idempotency keys, runs, hooks, queued
// payloads and OAuth records, so that any number of GoRunner processes on any number of
// hosts work as one, as with store/redisstore. It implements every store contract and
// passes the same conformance suites as store/sqlitestore, whose semantics it mirrors.
//
// The driver is github.com/jackc/pgx/v5 with its pool (pgxpool). Every multi-statement
// change is one transaction (READ COMMITTED); the records a change decides on are locked
// by it: a row read FOR UPDATE (drafts, publishes), a conditional UPDATE or an INSERT … ON
// CONFLICT (tokens, keys, leases), or, for a scope's cap of idempotency keys, a
// transaction-level advisory lock on the scope. Claims of due runs select them FOR UPDATE
// SKIP LOCKED, so that concurrent claimers on many hosts never wait for one another nor
// take the same run. An admission (its key, its run, its steps, its start token) is one
// transaction.
//
// Records are encoded by store/storecodec, as in the other backends; columns are only what
// queries need. Times are UTC Unix nanoseconds in BIGINT columns (0 = unset), so they
// come back with full precision. The schema is versioned by embedded migrations (see
// migrate.go); the schema the store works in is the connection's search_path (the URL's
// options or search_path parameter; default public).
//
// Cross-process events use LISTEN/NOTIFY on one channel per schema (see events.go); a
// catalog write notifies in its own transaction, so the notice leaves only on commit.
//
// An error that comes from not reaching PostgreSQL (a dial refused, a connection cut, the
// server shutting down or not accepting connections yet) is marked store.ErrUnreachable
// (see unreachable), so that the faces answer it as an outage; every other error stays as
// it is.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gorunner/gorunner/store"
)

var _ store.Backend = (*Store)(nil)

// Store is a PostgreSQL-backed store, safe for concurrent use by many processes.
type Store struct {
	pool *pgxpool.Pool
	// schema is the schema the store works in (current_schema() at Open): it names the
	// events channel and keys the advisory locks, so that stores in other schemas of the
	// same database stay apart.
	schema string
	stop   context.CancelFunc // ends the sweeps of expired keys
	swept  chan struct{}      // closed when they have ended
}

// Open connects to the PostgreSQL database named by rawURL (postgres://USER@HOST:PORT/DB?…,
// every parameter pgx reads, pool_max_conns among them), checks that it answers, and brings
// the schema up to date.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing postgres url: %w", err)
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig is Open with a pool configuration made by the caller (tests set the
// search_path in cfg.ConnConfig.RuntimeParams).
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*Store, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening postgres: %w", unreachable(ctx, err))
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrating postgres: %w", err)
	}
	s.startSweeping()
	return s, nil
}

// Close ends the sweeps of expired keys and closes the pool.
func (s *Store) Close() error {
	s.stopSweeping()
	s.pool.Close()
	return nil
}

// Ping checks that the database answers from the store's schema: it reads the schema
// version, so a schema dropped or unreadable fails it too.
func (s *Store) Ping(ctx context.Context) error {
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("pinging postgres: %w", unreachable(ctx, err))
	}
	return nil
}

// querier is what *pgxpool.Pool and pgx.Tx share, so reads run inside or outside a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// write runs fn in one transaction: its statements commit together, or not at all when fn
// returns an error (which write returns, marked by unreachable). fn runs once.
func (s *Store) write(ctx context.Context, fn func(q querier) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(tx) })
	return unreachable(ctx, err)
}

// Error codes of PostgreSQL the store answers.
const (
	codeUnique  = "23505"
	codeNotNull = "23502"
)

// hasCode reports whether err is PostgreSQL's error with code.
func hasCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// mapErr turns "no rows" into notFound, a unique violation into conflict (when given) and
// an error of not reaching the server into store.ErrUnreachable.
func mapErr(ctx context.Context, err, notFound, conflict error) error {
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return notFound
	case conflict != nil && hasCode(err, codeUnique):
		return conflict
	default:
		return unreachable(ctx, err)
	}
}

// affected returns the number of rows a statement changed.
func affected(tag pgconn.CommandTag, err error) (int64, error) {
	return tag.RowsAffected(), err
}

// collect scans every row with scan and closes rows.
func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// nanos encodes t as UTC Unix nanoseconds; the zero time is 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// nanosPtr encodes an optional time; nil is 0.
func nanosPtr(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return nanos(*t)
}

// fromNanos decodes nanos; 0 is the zero time.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// fromNanosPtr decodes an optional time; 0 is nil.
func fromNanosPtr(n int64) *time.Time {
	if n == 0 {
		return nil
	}
	t := fromNanos(n)
	return &t
}
