package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
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
// transaction (group commit), each in its own savepoint, and write returns only once that
// transaction has committed.
//
// A write that finds no transaction under way runs its own batch on its caller's
// goroutine, with the writes queued by then; the writes that arrive meanwhile queue, and
// the caller leaves them to a goroutine that runs their batches until none waits. So a
// lone write costs no hand-off between goroutines, and a caller never runs batches past
// its own.
//
// fn may run on another caller's goroutine, and more than once (again, from the start,
// when another request of its batch lost the transaction), so it must only set its
// results, not add to them, and it must not call write (it would wait for itself). A ctx
// done before fn runs skips it, and a write still queued then returns at once (one that
// leads still runs the batch it took for the others); fn's statements heed ctx
// themselves. An error that says SQLite could not serve now (the lock held by another
// process past the busy timeout, an I/O error) is marked store.ErrUnreachable.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.queue = append(s.queue, req)
	lead := !s.leading
	s.leading = true
	s.mu.Unlock()
	if lead {
		func() {
			defer s.handOff()
			s.commit(s.next())
		}()
	} else {
		select {
		case <-req.done:
		case <-ctx.Done():
			if s.unqueue(req) {
				return ctx.Err()
			}
			<-req.done
		}
	}
	if req.panicked != nil {
		panic(req.panicked)
	}
	return unavailable(req.err)
}

// next takes the next batch, up to maxBatch requests, off the queue. With none waiting it
// ends the lead and returns nil.
func (s *Store) next() []*writeReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.waitingLocked() {
		return nil
	}
	batch := slices.Clone(s.queue[:min(len(s.queue), maxBatch)])
	rest := copy(s.queue, s.queue[len(batch):])
	clear(s.queue[rest:])
	s.queue = s.queue[:rest]
	return batch
}

// handOff leaves the writes still queued to a goroutine of their own, or ends the lead.
func (s *Store) handOff() {
	s.mu.Lock()
	more := s.waitingLocked()
	s.mu.Unlock()
	if more {
		go s.drain()
	}
}

// drain runs batches until none waits.
func (s *Store) drain() {
	for batch := s.next(); batch != nil; batch = s.next() {
		s.commit(batch)
	}
}

// waitingLocked reports whether writes are queued; when none are, it ends the lead (and
// tells a Close waiting for it). s.mu is held, by the goroutine that leads.
func (s *Store) waitingLocked() bool {
	if len(s.queue) > 0 {
		return true
	}
	s.leading = false
	if s.closed {
		close(s.idle)
	}
	return false
}

// unqueue takes req off the queue, and reports whether it was still there (not yet in a
// batch). It scans the queue for req: a cancelled write leaves no slot behind.
func (s *Store) unqueue(req *writeReq) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.queue, req)
	if i < 0 {
		return false
	}
	s.queue = slices.Delete(s.queue, i, i+1)
	return true
}

// commit runs a batch, again without any request that lost the transaction for the others.
//
// A panic outside the requests' own fns (a bug of the store or the driver) answers every
// request of the batch still waiting with an error, drops the connection (it may be inside
// the transaction), and goes on up the goroutine that leads; the lead passes on.
func (s *Store) commit(batch []*writeReq) {
	defer func() {
		if p := recover(); p != nil {
			s.dropConn()
			for _, req := range batch {
				select {
				case <-req.done:
				default:
					req.answer(fmt.Errorf("write failed: %v", p))
				}
			}
			panic(p)
		}
	}()
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
