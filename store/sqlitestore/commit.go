package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// maxBatch is the most write requests one group commit holds. Requests that arrive while
// a commit is in progress wait for it and then share the next one, up to maxBatch of
// them; a bigger batch would only make its first request wait longer for its answer.
const maxBatch = 32

// ErrClosed is returned by a write to a closed store.
var ErrClosed = errors.New("sqlitestore: store closed")

// errTxLost marks a request whose failure rolled back the whole transaction (SQLite does
// that for an interrupted write, a full disk, an I/O error), not only its savepoint.
var errTxLost = errors.New("transaction rolled back")

// writeReq is one caller's write waiting for its batch.
type writeReq struct {
	ctx      context.Context
	fn       func(tx *sql.Tx) error
	err      error
	panicked any
	done     chan struct{}
}

// write runs fn as one atomic change: its statements commit together, or not at all when
// fn returns an error (which write returns). Writes of concurrent callers share a
// transaction (group commit, see commitLoop), each in its own savepoint, and write returns
// only once that transaction has committed. fn runs on the store's committer goroutine and
// may run more than once (again, from the start, when another request of its batch lost
// the transaction), so it must only set its results, not add to them, and it must not call
// write (it would wait for itself). A ctx done before fn runs skips it; fn's statements heed
// ctx themselves. An error that says SQLite could not serve now (the lock held by another
// process past the busy timeout, an I/O error) is marked store.ErrUnreachable.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case s.writes <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return ErrClosed
	}
	<-req.done
	if req.panicked != nil {
		panic(req.panicked)
	}
	return unavailable(req.err)
}

// commitLoop is the committer: it takes the requests waiting to write, up to maxBatch, runs
// them in one transaction and answers them, until the store closes; then it hands its
// connection back.
func (s *Store) commitLoop() {
	defer close(s.stopped)
	defer func() {
		if s.conn != nil {
			_ = s.conn.Close()
		}
	}()
	batch := make([]*writeReq, 0, maxBatch)
	for {
		select {
		case req := <-s.writes:
			batch = append(batch[:0], req)
		case <-s.closing:
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case req := <-s.writes:
				batch = append(batch, req)
			default:
				break fill
			}
		}
		s.commit(batch)
		clear(batch)
	}
}

// commit runs a batch, again without any request that lost the transaction for the others.
func (s *Store) commit(batch []*writeReq) {
	live := make([]*writeReq, 0, len(batch))
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.answer(err)
			continue
		}
		live = append(live, req)
	}
	for len(live) > 0 {
		live = s.runBatch(live)
	}
}

// runBatch runs reqs in one transaction and answers each after COMMIT, a failed request
// too: its savepoint is rolled back, but its error may tell of the batch's uncommitted
// changes (a start token's owner created by another request), which its caller may go and
// read. A lone request needs no savepoint. If a request lost the transaction, runBatch
// answers it and returns all the others to run again.
func (s *Store) runBatch(reqs []*writeReq) (again []*writeReq) {
	tx, err := s.begin()
	if err != nil {
		for _, req := range reqs {
			req.answer(fmt.Errorf("beginning transaction: %w", err))
		}
		return nil
	}
	if len(reqs) == 1 {
		s.runAlone(tx, reqs[0])
		return nil
	}
	errs := make([]error, len(reqs))
	for i, req := range reqs {
		errs[i] = s.runInSavepoint(tx, req)
		if errors.Is(errs[i], errTxLost) {
			_ = s.rollback(tx) // already rolled back by SQLite; this ends database/sql's Tx
			req.answer(req.err)
			// The others run again, those that failed too: their errors may have come
			// from changes now rolled back.
			return append(reqs[:i:i], reqs[i+1:]...)
		}
	}
	commitErr := s.commitTx(tx)
	for i, req := range reqs {
		if errs[i] == nil {
			req.answer(commitErr)
			continue
		}
		req.answer(errors.Join(errs[i], commitErr))
	}
	return nil
}

// runAlone runs a batch of one request: its error rolls back the whole transaction.
func (s *Store) runAlone(tx *sql.Tx, req *writeReq) {
	if err := req.call(tx); err != nil {
		req.answer(errors.Join(err, s.rollback(tx)))
		return
	}
	req.answer(s.commitTx(tx))
}

// begin starts a transaction on the committer's own connection, kept across transactions
// so that its page cache stays warm (it wrote those pages) and the kept statements are
// prepared on it once. A connection gone bad (closed, or reported bad by the driver, which
// makes database/sql close it) is replaced by one from the pool, once per transaction.
// Only the committer goroutine uses s.conn.
func (s *Store) begin() (*sql.Tx, error) {
	// The transaction belongs to no caller: a caller's cancelled context must not roll back
	// the others' changes (database/sql rolls a transaction back when its context ends).
	bg := context.Background()
	for retried := false; ; retried = true {
		if s.conn == nil {
			conn, err := s.db.Conn(bg)
			if err != nil {
				return nil, fmt.Errorf("taking a connection: %w", err)
			}
			s.conn = conn
		}
		tx, err := s.conn.BeginTx(bg, nil)
		if err == nil {
			return tx, nil
		}
		s.dropConn()
		if retried || !(errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)) {
			return nil, err
		}
	}
}

// commitTx commits tx, dropping the committer's connection if that fails: the connection
// may be left inside the transaction, which would fail every later BEGIN on it.
func (s *Store) commitTx(tx *sql.Tx) error {
	if err := tx.Commit(); err != nil {
		s.dropConn()
		return fmt.Errorf("committing transaction: %w", err)
	}
	return nil
}

// rollback rolls tx back, dropping the committer's connection if that fails (see commitTx).
// A transaction SQLite already rolled back fails its ROLLBACK too, and so costs the
// connection; that only happens with an interrupted write, a full disk or an I/O error.
func (s *Store) rollback(tx *sql.Tx) error {
	err := tx.Rollback()
	if err == nil || errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	s.dropConn()
	return fmt.Errorf("rolling back: %w", err)
}

// dropConn closes the committer's connection for good: reporting it bad makes database/sql
// close it instead of handing it back to the pool, where it might still be inside a
// transaction. The next transaction takes a new one.
func (s *Store) dropConn() {
	if s.conn == nil {
		return
	}
	_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	s.conn = nil
}

// savepoint statements: one savepoint at a time, released before the next request runs.
const (
	savepoint  = `SAVEPOINT request`
	release    = `RELEASE request`
	rollbackTo = `ROLLBACK TO request`
)

// runInSavepoint runs req within tx in a savepoint and returns its error after rolling the
// savepoint back, or errTxLost (req.err set) when the transaction itself is gone.
func (s *Store) runInSavepoint(tx *sql.Tx, req *writeReq) error {
	q, bg := s.in(tx), context.Background()
	if _, err := q.ExecContext(bg, savepoint); err != nil {
		req.err = fmt.Errorf("starting savepoint: %w", err)
		return errTxLost
	}
	err := req.call(tx)
	if err == nil {
		if _, err := q.ExecContext(bg, release); err != nil {
			req.err = fmt.Errorf("releasing savepoint: %w", err)
			return errTxLost
		}
		return nil
	}
	_, rbErr := q.ExecContext(bg, rollbackTo)
	if rbErr == nil {
		_, rbErr = q.ExecContext(bg, release)
	}
	if rbErr != nil {
		req.err = err
		return errTxLost
	}
	return err
}

// call runs req.fn, turning a panic into an error here and a panic again in the caller.
func (req *writeReq) call(tx *sql.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			req.panicked = p
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return req.fn(tx)
}

// answer hands req its result and wakes its caller.
func (req *writeReq) answer(err error) {
	req.err = err
	close(req.done)
}
