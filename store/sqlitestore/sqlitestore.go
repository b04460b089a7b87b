// Package sqlitestore is GoRunner's embedded backend: one SQLite file holds workflows,
// versions, connections, API tokens, idempotency keys, runs, hooks and queued payloads.
// It implements catalog.Store, auth.Store, idempotency.Store and runner.Store, and several
// processes on one host may share the file.
//
// The driver is modernc.org/sqlite (pure Go, no cgo). Open builds the DSN
//
//	file:PATH?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate
//
// for these reasons:
//
//   - journal_mode(WAL): readers never block the writer nor the writer readers, so API
//     reads stay fast while workers commit steps; WAL is a property of the file, shared by
//     every process that opens it.
//   - busy_timeout(10000): SQLite allows one writer at a time; a connection that finds the
//     write lock taken (by another process) waits up to 10 s instead of failing at once.
//   - _txlock=immediate: every transaction starts with BEGIN IMMEDIATE and so takes the
//     write lock up front. A deferred transaction that reads and then writes can fail with
//     SQLITE_BUSY_SNAPSHOT when another process committed in between, and the busy handler
//     cannot retry that; taking the lock first makes every read-then-write transaction
//     (claims, lease checks, publish) serialisable across processes. Plain reads run outside
//     transactions and never take the lock.
//   - foreign_keys(1): versions reference their workflow.
//   - synchronous(NORMAL): the usual WAL pairing; a commit survives a process crash, and
//     only an OS crash or power loss may roll back the last transactions.
//
// A new file is made with auto_vacuum INCREMENTAL (incrementalVacuum, before the first
// migration): it keeps a map of its free pages, so that deleting runs (retention) gives
// space back in bounded steps (deleteRuns). A file made before keeps auto_vacuum NONE,
// where SQLite still reuses the pages deletions free for new rows (the file stops growing
// but does not shrink); `PRAGMA auto_vacuum = INCREMENTAL; VACUUM;` once, with every
// process stopped, switches it.
//
// Within one process, writes commit one transaction at a time, on the goroutine of the
// write that found none under way (see write in commit.go): the writes that arrive while a
// transaction commits share the next one (group commit, at most maxBatch), each in its own
// savepoint, so one COMMIT (one WAL write, see walVFSName) answers many callers and one
// caller's error undoes only its own changes. Across processes the busy timeout
// rules. Every statement is kept prepared (see stmtCache), and a run is read with its step
// records in one statement, so a read needs no transaction of its own.
//
// Every multi-statement change runs in one transaction. Claims (runs, tokens, idempotency
// keys) are decided inside the write transaction by UPDATE … WHERE or INSERT … ON CONFLICT,
// never by a check outside it. Times are stored as UTC Unix nanoseconds (0 = unset) and come
// back in UTC with full precision. List cursors are opaque: base64 of the last sort key.
// The schema is versioned by embedded migrations (see migrate.go). An error that says
// SQLite cannot serve now (the lock held past the busy timeout, an I/O error, a full disk)
// is marked store.ErrUnreachable where write answers and where each read does (see
// unavailable), so that the faces answer it as an outage; every other error stays as it is.
//
// In-progress idempotency keys are stored with an expiry of their creation time plus 24 h
// (inProgressExpiry), so a LimitReached answer can always say when the oldest key frees up.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gorunner/gorunner/store"
)

var _ store.Backend = (*Store)(nil)

// idleConns is how many connections the pool keeps open while idle. database/sql keeps
// 2 by default and closes the others when handed back, and a new connection must load the
// schema and prepare every kept statement again; concurrent readers (API waits, MCP calls,
// workers) beside the committer use more than 2.
const idleConns = 16

// busyTimeout is how long a statement waits for the lock another process holds before it
// fails with SQLITE_BUSY, which the store answers as store.ErrUnreachable (see unavailable).
const busyTimeout = 10 * time.Second

// dsnParams are the DSN's parameters after the busy timeout (see the package doc).
const dsnParams = "&vfs=" + walVFSName + "&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"

// Store is a SQLite-backed store. It is safe for concurrent use, also by several processes
// sharing one file.
type Store struct {
	db        *sql.DB
	conn      *sql.Conn // the committer's connection, used by the goroutine that leads (see begin)
	stmts     *stmtCache
	mu        sync.Mutex
	queue     []*writeReq   // writes waiting for a batch, oldest first
	leading   bool          // a goroutine runs batches; false only with nothing queued
	closed    bool          // Close was called: no write is queued any more
	idle      chan struct{} // closed when the lead ends after Close
	closeOnce sync.Once
	stopSweep context.CancelFunc // ends the sweeps of expired keys (see startSweeping)
	swept     chan struct{}      // closed when they have ended
}

// Open opens (creating if needed) the SQLite database at path and brings its schema up to
// date. The file and its -wal and -shm are made 0600 (see privateFiles).
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, busyTimeout)
}

// open is Open with the busy timeout given.
func open(ctx context.Context, path string, busy time.Duration) (*Store, error) {
	if err := privateFiles(path); err != nil {
		return nil, err
	}
	if err := registerWALVFS(); err != nil {
		return nil, err
	}
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)%s", (&url.URL{Path: path}).EscapedPath(), busy.Milliseconds(), dsnParams)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite %q: %w", path, err)
	}
	db.SetMaxIdleConns(idleConns)
	s := &Store{db: db, stmts: &stmtCache{db: db}, idle: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("migrating sqlite %q: %w", path, err), s.Close())
	}
	s.startSweeping()
	return s, nil
}

// Close ends the sweeps of expired keys, waits for the batch under way, if any, and closes
// the database. Writes waiting for a batch, and any later, fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopSweeping()
		s.mu.Lock()
		s.closed = true
		waiting, leading := s.queue, s.leading
		s.queue = nil
		s.mu.Unlock()
		for _, req := range waiting {
			req.answer(ErrClosed)
		}
		if leading {
			<-s.idle
		}
		if s.conn != nil {
			_ = s.conn.Close()
		}
	})
	return s.db.Close()
}

// Ping checks that the database answers from its file: it reads the schema version, so a
// file that cannot be read or opened, or stays locked past the busy timeout, fails it with
// store.ErrUnreachable (a "SELECT 1" would answer without touching the file).
func (s *Store) Ping(ctx context.Context) error {
	var version int
	if err := s.q().QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("pinging sqlite: %w", unavailable(err))
	}
	return nil
}

// querier is what *sql.DB, *sql.Tx and prepared share, so reads run inside or outside a
// transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// scanner is what *sql.Row and *sql.Rows share.
type scanner interface {
	Scan(dest ...any) error
}

// isUnique reports whether err is a UNIQUE or PRIMARY KEY constraint violation.
func isUnique(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// isNotNull reports whether err is a NOT NULL constraint violation, by its extended result
// code: which column it was is only in the message's text, so a caller relies on it only
// where one column alone can receive NULL (see insertRun).
func isNotNull(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_NOTNULL
}

// mapErr turns "no rows" into notFound, a unique violation into conflict (when given) and a
// store that cannot serve into store.ErrUnreachable (see unavailable).
func mapErr(err, notFound, conflict error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return notFound
	case conflict != nil && isUnique(err):
		return conflict
	default:
		return unavailable(err)
	}
}

// affected returns the number of rows a statement changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
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
