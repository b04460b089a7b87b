package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
)

// maxStatements bounds how many distinct SQL texts the store keeps prepared. The store's
// own statements are far fewer (about 100); the bound only matters if a query text were
// ever built from data, which then runs unprepared instead of growing the cache.
const maxStatements = 512

// stmtCache keeps every statement the store runs prepared, keyed by its SQL text, so that
// SQLite parses each text once per connection instead of on every call (the driver,
// modernc.org/sqlite, prepares and finalizes a statement per call otherwise). database/sql
// prepares a kept *sql.Stmt again on each pooled connection that first runs it, and a
// transaction borrows the connection's copy through Tx.StmtContext. A first use within a
// write prepares on another pooled connection while the committer holds its own, so the
// pool must not be limited to one connection (Open sets no limit).
type stmtCache struct {
	db    *sql.DB
	stmts sync.Map // SQL text → *sql.Stmt
	mu    sync.Mutex
	n     int
}

// get returns the kept statement for query, preparing it on first use; nil when it cannot
// be prepared (the caller then runs the text, which reports the error) or the cache is full.
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	if st, ok := c.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	if c.n >= maxStatements {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.stmts.Store(query, st)
	c.n++
	return st
}

// prepared is a querier that runs every statement as a kept prepared statement: on the
// pool when tx is nil, else within tx. A statement must not run again while rows it
// returned are still open in the same transaction (they share one SQLite statement).
type prepared struct {
	cache *stmtCache
	tx    *sql.Tx
}

// q runs statements on the pool, outside any transaction.
func (s *Store) q() prepared {
	return prepared{cache: s.stmts}
}

// in runs statements within tx.
func (s *Store) in(tx *sql.Tx) prepared {
	return prepared{cache: s.stmts, tx: tx}
}

// stmt returns the kept statement for query, within p.tx if set; nil to run the text.
func (p prepared) stmt(ctx context.Context, query string) *sql.Stmt {
	st := p.cache.get(ctx, query)
	if st == nil || p.tx == nil {
		return st
	}
	return p.tx.StmtContext(ctx, st)
}

// text is where a statement that is not kept runs.
func (p prepared) text() querier {
	if p.tx != nil {
		return p.tx
	}
	return p.cache.db
}

func (p prepared) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.text().ExecContext(ctx, query, args...)
}

func (p prepared) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.text().QueryContext(ctx, query, args...)
}

func (p prepared) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.text().QueryRowContext(ctx, query, args...)
}
