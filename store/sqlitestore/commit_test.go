package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"
)

// openT opens a store on a fresh file with a table of keys for the tests to write.
func openT(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "commit.db")
	s, err := Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.NoError(t, s.write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE test_keys (k TEXT PRIMARY KEY)`)
		return err
	}))
	return s, path
}

// insertKey is a write adding key k.
func insertKey(ctx context.Context, s *Store, k string) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := s.in(tx).ExecContext(ctx, `INSERT INTO test_keys (k) VALUES (?)`, k)
		return err
	}
}

// committed reports whether key k is visible to a connection outside any write, that is
// whether it has been committed.
func committed(t *testing.T, s *Store, k string) bool {
	t.Helper()
	ok, err := isCommitted(s, k)
	require.NoError(t, err)
	return ok
}

// isCommitted is committed for goroutines other than the test's.
func isCommitted(s *Store, k string) (bool, error) {
	var n int
	err := s.db.QueryRow(`SELECT COUNT(*) FROM test_keys WHERE k = ?`, k).Scan(&n)
	return n == 1, err
}

// request builds a write request as write would.
func request(ctx context.Context, fn func(tx *sql.Tx) error) *writeReq {
	return &writeReq{ctx: ctx, fn: fn, done: make(chan struct{})}
}

// answered waits for req's answer and returns its error.
func answered(t *testing.T, req *writeReq) error {
	t.Helper()
	select {
	case <-req.done:
		return req.err
	case <-time.After(time.Minute):
		t.Fatal("a write request was never answered")
		return nil
	}
}

// blockCommitter holds the committer inside a write until the returned release is called,
// so that the writes started meanwhile queue for the next batch.
func blockCommitter(t *testing.T, s *Store) (release func() error) {
	t.Helper()
	started, hold := make(chan struct{}), make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- s.write(context.Background(), func(tx *sql.Tx) error {
			close(started)
			<-hold
			return insertKey(context.Background(), s, "blocker")(tx)
		})
	}()
	<-started
	return func() error {
		close(hold)
		return <-result
	}
}

// TestConcurrentWritesFailAlone has many goroutines write at once, every seventh adding
// its key and then failing: each gets its own answer, a failed write's key is absent, and
// every other write is committed when its call returns.
func TestConcurrentWritesFailAlone(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	const writers = 3 * maxBatch
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			k := fmt.Sprint("k", i)
			errs[i] = s.write(ctx, func(tx *sql.Tx) error {
				if err := insertKey(ctx, s, k)(tx); err != nil {
					return err
				}
				if i%7 == 0 {
					return fmt.Errorf("writer %d: %w", i, errBoom)
				}
				return nil
			})
			if errs[i] != nil {
				return
			}
			if ok, err := isCommitted(s, k); !ok {
				errs[i] = errors.Join(fmt.Errorf("writer %d answered before its commit", i), err)
			}
		})
	}
	wg.Wait()
	for i := range writers {
		k := fmt.Sprint("k", i)
		if i%7 == 0 {
			require.ErrorIs(t, errs[i], errBoom)
			require.ErrorContains(t, errs[i], fmt.Sprintf("writer %d:", i))
			require.False(t, committed(t, s, k), k)
			continue
		}
		require.NoError(t, errs[i])
		require.True(t, committed(t, s, k), k)
	}
}

var errBoom = errors.New("boom")

// TestBatch runs batches directly: a failed request undoes only its own changes, one that
// lost the whole transaction has the others run again, a request whose context ended
// before its turn never runs, and a panic is the caller's.
func TestBatch(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	tests := []struct {
		name  string
		fail  func(s *Store) func(tx *sql.Tx) error
		ctx   context.Context
		err   error
		panic bool
	}{
		{
			name: "error after a write",
			fail: func(s *Store) func(tx *sql.Tx) error {
				return func(tx *sql.Tx) error {
					if err := insertKey(ctx, s, "failed")(tx); err != nil {
						return err
					}
					return errBoom
				}
			},
			ctx: ctx,
			err: errBoom,
		},
		{
			name: "constraint violation",
			fail: func(s *Store) func(tx *sql.Tx) error { return insertKey(ctx, s, "k0") },
			ctx:  ctx,
		},
		{
			name: "transaction lost",
			fail: func(s *Store) func(tx *sql.Tx) error {
				return func(tx *sql.Tx) error {
					if err := insertKey(ctx, s, "failed")(tx); err != nil {
						return err
					}
					// What SQLite does to a write it interrupts: the whole transaction goes.
					if _, err := tx.Exec(`ROLLBACK`); err != nil {
						return err
					}
					return errBoom
				}
			},
			ctx: ctx,
			err: errBoom,
		},
		{
			name: "context ended before its turn",
			fail: func(s *Store) func(tx *sql.Tx) error {
				return func(*sql.Tx) error { panic("a cancelled request ran") }
			},
			ctx: cancelled,
			err: context.Canceled,
		},
		{
			name: "panic",
			fail: func(s *Store) func(tx *sql.Tx) error {
				return func(tx *sql.Tx) error {
					if err := insertKey(ctx, s, "failed")(tx); err != nil {
						return err
					}
					panic(errBoom)
				}
			},
			ctx:   ctx,
			panic: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openT(t)
			const n = 5
			reqs := make([]*writeReq, n)
			for i := range reqs {
				reqs[i] = request(ctx, insertKey(ctx, s, fmt.Sprint("k", i)))
			}
			failing := request(tt.ctx, tt.fail(s))
			batch := append(append(append([]*writeReq{}, reqs[:3]...), failing), reqs[3:]...)
			s.commit(batch)

			err := answered(t, failing)
			require.Error(t, err)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
			}
			require.Equal(t, tt.panic, failing.panicked != nil)
			require.False(t, committed(t, s, "failed"))
			for i, req := range reqs {
				require.NoError(t, answered(t, req))
				require.True(t, committed(t, s, fmt.Sprint("k", i)))
			}
		})
	}
}

// TestWritePanics: a write that panics panics in its caller, and the store goes on.
func TestWritePanics(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	require.PanicsWithValue(t, errBoom, func() {
		_ = s.write(ctx, func(tx *sql.Tx) error {
			if err := insertKey(ctx, s, "failed")(tx); err != nil {
				return err
			}
			panic(errBoom)
		})
	})
	require.NoError(t, s.write(ctx, insertKey(ctx, s, "after")))
	require.False(t, committed(t, s, "failed"))
	require.True(t, committed(t, s, "after"))
}

// TestWaiterCancelled: a write whose context ends while it waits for the committer returns
// at once with the context's error and never runs; the others are not disturbed.
func TestWaiterCancelled(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	release := blockCommitter(t, s)

	waiting, cancel := context.WithCancel(ctx)
	result := make(chan error, 1)
	go func() { result <- s.write(waiting, insertKey(ctx, s, "cancelled")) }()
	other := make(chan error, 1)
	go func() { other <- s.write(ctx, insertKey(ctx, s, "other")) }()
	cancel()
	select {
	case err := <-result:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		t.Fatal("a cancelled write waited for the committer")
	}

	require.NoError(t, release())
	require.NoError(t, <-other)
	require.True(t, committed(t, s, "blocker"))
	require.True(t, committed(t, s, "other"))
	require.False(t, committed(t, s, "cancelled"))
}

// TestWaitersCancelledAmongOthers: of many writes queued behind the committer, those whose
// context ends return at once, leave the queue and never run, wherever they stand in it;
// the others all commit, and the queue is empty once the lead ends.
func TestWaitersCancelledAmongOthers(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	release := blockCommitter(t, s)

	const writers = 2 * maxBatch
	cancelled, cancel := context.WithCancel(ctx)
	errs := make([]error, writers)
	var gone, wg sync.WaitGroup
	for i := range writers {
		k, wctx, done := fmt.Sprint("k", i), ctx, &wg
		if i%2 == 1 {
			wctx, done = cancelled, &gone
		}
		done.Go(func() { errs[i] = s.write(wctx, insertKey(ctx, s, k)) })
	}
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.queue) == writers
	}, time.Minute, time.Millisecond, "every write queued")
	cancel()
	gone.Wait()
	s.mu.Lock()
	queued := len(s.queue)
	s.mu.Unlock()

	require.NoError(t, release())
	wg.Wait()
	require.Equal(t, writers/2, queued, "a cancelled write left its slot in the queue")
	for i, err := range errs {
		k := fmt.Sprint("k", i)
		if i%2 == 1 {
			require.ErrorIs(t, err, context.Canceled, k)
			require.False(t, committed(t, s, k), k)
			continue
		}
		require.NoError(t, err, k)
		require.True(t, committed(t, s, k), k)
	}
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.leading && len(s.queue) == 0
	}, time.Minute, time.Millisecond, "the queue is left empty")
}

// TestClosedStore: Close lets the batch in progress commit, fails the writes waiting for
// the next one, and every later write, with ErrClosed.
func TestClosedStore(t *testing.T) {
	t.Parallel()
	s, path := openT(t)
	ctx := context.Background()
	release := blockCommitter(t, s)

	waiting := make(chan error, 1)
	go func() { waiting <- s.write(ctx, insertKey(ctx, s, "waiting")) }()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-waiting:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(time.Minute):
		t.Fatal("a write waiting for a closed store's committer did not fail")
	}
	require.NoError(t, release(), "the batch in progress commits")
	require.NoError(t, <-closed)
	require.ErrorIs(t, s.write(ctx, insertKey(ctx, s, "later")), ErrClosed)

	reopened, err := Open(ctx, path)
	require.NoError(t, err)
	defer func() { require.NoError(t, reopened.Close()) }()
	require.True(t, committed(t, reopened, "blocker"))
	require.False(t, committed(t, reopened, "waiting"))
	require.False(t, committed(t, reopened, "later"))
}

// TestFailedAnsweredAfterCommit: a failed request is answered only once its batch has
// committed, since its error may tell of another request's changes (here the key it
// collided with), which its caller may then read.
func TestFailedAnsweredAfterCommit(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	first := request(ctx, insertKey(ctx, s, "owner"))
	collides := request(ctx, insertKey(ctx, s, "owner"))
	started, hold := make(chan struct{}), make(chan struct{})
	last := request(ctx, func(*sql.Tx) error {
		close(started)
		<-hold
		return nil
	})
	go s.commit([]*writeReq{first, collides, last})

	select {
	case <-collides.done:
		t.Fatal("a failed request was answered before its batch committed")
	case <-started:
	}
	close(hold)
	require.Error(t, answered(t, collides))
	require.True(t, committed(t, s, "owner"))
	require.NoError(t, answered(t, first))
	require.NoError(t, answered(t, last))
}

// TestCommitterConn: the committer keeps one connection for its transactions, and replaces
// it when database/sql closed it: the store goes on writing.
func TestCommitterConn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		breakConn func(c *sql.Conn) error
	}{
		{name: "closed", breakConn: (*sql.Conn).Close},
		{name: "reported bad by the driver", breakConn: func(c *sql.Conn) error {
			// What database/sql does with a connection its driver reports bad: closes it.
			err := c.Raw(func(any) error { return driver.ErrBadConn })
			if errors.Is(err, driver.ErrBadConn) {
				return nil
			}
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openT(t)
			ctx := context.Background()
			kept := s.conn
			require.NoError(t, s.write(ctx, insertKey(ctx, s, "before")))
			require.Same(t, kept, s.conn, "a write took another connection")

			require.NoError(t, tt.breakConn(s.conn))
			require.NoError(t, s.write(ctx, insertKey(ctx, s, "after")))
			require.NotSame(t, kept, s.conn)
			require.True(t, committed(t, s, "before"))
			require.True(t, committed(t, s, "after"))
		})
	}
}

// TestFailedCommit: a COMMIT that fails (a deferred foreign key left dangling) fails its
// requests and leaves no transaction open on the committer's connection: the next write
// commits.
func TestFailedCommit(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	require.NoError(t, s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE test_refs (k TEXT REFERENCES test_keys (k) DEFERRABLE INITIALLY DEFERRED)`)
		return err
	}))
	dangling := func(tx *sql.Tx) error {
		if err := insertKey(ctx, s, "dangling")(tx); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO test_refs (k) VALUES ('missing')`)
		return err
	}
	for _, batch := range [][]*writeReq{
		{request(ctx, dangling)},
		{request(ctx, insertKey(ctx, s, "sharing")), request(ctx, dangling)},
	} {
		s.commit(batch)
		for _, req := range batch {
			require.ErrorContains(t, answered(t, req), "committing transaction")
		}
		require.NoError(t, s.write(ctx, insertKey(ctx, s, fmt.Sprint("after", len(batch)))))
	}
	require.False(t, committed(t, s, "dangling"))
	require.False(t, committed(t, s, "sharing"))
	require.True(t, committed(t, s, "after1"))
	require.True(t, committed(t, s, "after2"))
}

// cancels maps a test's name to the cancel of the context its write runs with, for the SQL
// function cancel_ctx(name, x), which cancels it and returns 0.
var cancels sync.Map

// init registers cancel_ctx before any test runs: registering a function changes the
// driver's state that every new connection reads, so it must not happen while other
// tests open connections.
func init() {
	sqlite.MustRegisterScalarFunction("cancel_ctx", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		if cancel, ok := cancels.Load(args[0]); ok {
			cancel.(context.CancelFunc)()
		}
		return int64(0), nil
	})
}

// TestInterruptedWrite has SQLite interrupt a request's statement for real, its context
// cancelled while the statement runs: a read leaves the transaction (and the committer's
// connection, which database/sql's pool would have discarded) usable, a write loses it,
// and either way only that request fails.
func TestInterruptedWrite(t *testing.T) {
	t.Parallel()
	const endless = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) `
	tests := []struct {
		name, query string
		lone        bool
	}{
		{name: "read", query: endless + `SELECT count(*) FROM c WHERE cancel_ctx(?, x)`, lone: true},
		{name: "write", query: `INSERT INTO test_keys (k) ` + endless + `SELECT 'interrupted' FROM c WHERE cancel_ctx(?, x)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openT(t)
			bg := context.Background()
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			cancels.Store(t.Name(), cancel)
			interrupted := request(ctx, func(tx *sql.Tx) error {
				if err := insertKey(bg, s, "interrupted")(tx); err != nil {
					return err
				}
				_, err := s.in(tx).ExecContext(ctx, tt.query, t.Name())
				return err
			})
			var others []*writeReq
			if !tt.lone {
				others = []*writeReq{request(bg, insertKey(bg, s, "k0")), request(bg, insertKey(bg, s, "k1"))}
			}
			kept := s.conn
			s.commit(append([]*writeReq{interrupted}, others...))
			require.ErrorIs(t, answered(t, interrupted), context.Canceled)
			for i, req := range others {
				require.NoError(t, answered(t, req))
				require.True(t, committed(t, s, fmt.Sprint("k", i)))
			}
			if tt.lone {
				require.Same(t, kept, s.conn, "an interrupted read cost the connection")
			}
			require.NoError(t, s.write(bg, insertKey(bg, s, "after")))
			require.False(t, committed(t, s, "interrupted"))
			require.True(t, committed(t, s, "after"))
		})
	}
}

// panicky is a context whose Err panics, so that the store's own code panics while it runs
// a batch, outside the requests' fns.
type panicky struct{ context.Context }

func (panicky) Err() error { panic("store bug") }

// TestLeaderPanics: a panic in the store's own code while a caller leads a batch reaches
// that caller; the batch's other requests are answered with an error instead of waiting
// for ever, and the store goes on writing.
func TestLeaderPanics(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	other := request(ctx, insertKey(ctx, s, "other"))
	require.PanicsWithValue(t, "store bug", func() {
		s.commit([]*writeReq{other, request(panicky{ctx}, insertKey(ctx, s, "never"))})
	})
	require.ErrorContains(t, answered(t, other), "write failed: store bug")

	require.PanicsWithValue(t, "store bug", func() { _ = s.write(panicky{ctx}, insertKey(ctx, s, "never")) })
	require.NoError(t, s.write(ctx, insertKey(ctx, s, "after")), "the lead passed on")
	require.False(t, committed(t, s, "other"))
	require.True(t, committed(t, s, "after"))
}
