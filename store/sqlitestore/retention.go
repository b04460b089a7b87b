package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gorunner/gorunner/runner"
)

// vacuumPages bounds the free pages one batch of deletions gives back to the file system
// (incremental vacuum), so that a batch stays short; the rest wait for the next batch, and
// SQLite reuses free pages for new rows meanwhile.
const vacuumPages = 1024

// The deletion of runs: every table holding a part of one, for a JSON array of run IDs, the
// run's row last.
var deleteRunParts = []string{
	`DELETE FROM run_steps WHERE run_id IN (SELECT value FROM json_each(?1))`,
	`DELETE FROM hooks WHERE run_id IN (SELECT value FROM json_each(?1))`,
	`DELETE FROM payloads WHERE run_id IN (SELECT value FROM json_each(?1))`,
	`DELETE FROM runs WHERE id IN (SELECT value FROM json_each(?1))`,
}

// The walk of SweepEnded: runs created at or before ?1, after (?2, ?3), oldest first, ?4 of
// them, in runs_created (or runs_workflow_created, of workflow ?5).
const (
	sweepWalk = `SELECT id, created_at, finished_at, ` + deletable + ` FROM runs
		WHERE created_at <= ?1 AND (created_at, id) > (?2, ?3) ORDER BY created_at, id LIMIT ?4`
	sweepWalkWorkflow = `SELECT id, created_at, finished_at, ` + deletable + ` FROM runs
		WHERE workflow_id = ?5 AND created_at <= ?1 AND (created_at, id) > (?2, ?3)
		ORDER BY created_at, id LIMIT ?4`
	// deletable: the run ended, and so did its parent, if any: a parent still active
	// reads its child's end when it resumes, and would start a child run anew were it gone.
	deletable = `(status IN ('completed', 'failed', 'cancelled') AND (parent_run_id = '' OR NOT EXISTS
		(SELECT 1 FROM runs AS parent WHERE parent.id = runs.parent_run_id AND parent.` + notTerminal + `)))`
)

// DeleteRun deletes an ended run with its steps, payloads and hooks.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var done bool
		err := s.in(tx).QueryRowContext(ctx, `SELECT `+deletable+` FROM runs WHERE id = ?`, id).Scan(&done)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return runner.ErrNotFound
		case err != nil:
			return err
		case !done:
			return runner.ErrRunActive
		}
		return s.deleteRuns(ctx, tx, []string{id})
	})
	if err != nil {
		return fmt.Errorf("deleting run %s: %w", id, err)
	}
	return nil
}

// SweepEnded deletes, in one transaction, the runs of one batch of retention.
func (s *Store) SweepEnded(ctx context.Context, p runner.SweepParams) (runner.SweepResult, error) {
	var out runner.SweepResult
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.sweepRuns(ctx, tx, p)
		return err
	})
	if err != nil {
		return runner.SweepResult{}, fmt.Errorf("sweeping ended runs: %w", err)
	}
	return out, nil
}

// sweepRuns walks one batch of p within tx and deletes the runs it finds ended.
func (s *Store) sweepRuns(ctx context.Context, tx *sql.Tx, p runner.SweepParams) (runner.SweepResult, error) {
	after := runner.RunKey{}
	afterAt := int64(-1)
	if p.After != nil {
		after, afterAt = *p.After, nanos(p.After.CreatedAt)
	}
	query, args := sweepWalk, []any{nanos(p.EndedBefore), afterAt, after.ID, p.Limit}
	if p.WorkflowID != "" {
		query, args = sweepWalkWorkflow, append(args, p.WorkflowID)
	}
	rows, err := s.in(tx).QueryContext(ctx, query, args...)
	if err != nil {
		return runner.SweepResult{}, err
	}
	defer rows.Close()
	var doomed []string
	var last runner.RunKey
	n := 0
	for ; rows.Next(); n++ {
		var created, finished int64
		var done bool
		if err := rows.Scan(&last.ID, &created, &finished, &done); err != nil {
			return runner.SweepResult{}, err
		}
		last.CreatedAt = fromNanos(created)
		if done && finished > 0 && finished <= nanos(p.EndedBefore) {
			doomed = append(doomed, last.ID)
		}
	}
	if err := rows.Err(); err != nil {
		return runner.SweepResult{}, err
	}
	out := runner.SweepResult{Deleted: len(doomed)}
	if n == p.Limit {
		out.Next = &last
	}
	if len(doomed) == 0 {
		return out, nil
	}
	return out, s.deleteRuns(ctx, tx, doomed)
}

// deleteRuns deletes the runs ids with every part of them, and gives back to the file
// system up to vacuumPages of the pages freed (a file made with auto_vacuum incremental).
func (s *Store) deleteRuns(ctx context.Context, tx *sql.Tx, ids []string) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	for _, q := range deleteRunParts {
		if _, err := s.in(tx).ExecContext(ctx, q, string(list)); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", vacuumPages))
	return err
}

// incrementalVacuum sets auto_vacuum INCREMENTAL on a file with no tables yet, the only
// time it takes at no cost (see the package doc), on one connection, outside any
// transaction. A file made before keeps its mode.
func (s *Store) incrementalVacuum(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var tables int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master`).Scan(&tables); err != nil || tables > 0 {
		return err
	}
	// The WAL mode the DSN sets has already written the file's header: an empty file's
	// VACUUM, which costs nothing, writes the mode in it.
	for _, q := range []string{`PRAGMA auto_vacuum = INCREMENTAL`, `VACUUM`, createMigrations} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Size is the file's size in bytes as SQLite counts it (its pages), the write-ahead log
// aside: the gorunner_store_bytes gauge.
func (s *Store) Size(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("measuring the database: %w", err)
	}
	return n, nil
}
