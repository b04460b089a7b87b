package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/runner"
)

// deletable is the SQL condition for a run that may be deleted: it ended, and so did its
// parent, if any: a parent still active reads its child's end when it resumes, and would
// start a child run anew were it gone.
const deletable = `(status IN ('completed', 'failed', 'cancelled') AND (parent_run_id = '' OR NOT EXISTS
	(SELECT 1 FROM runs AS parent WHERE parent.id = runs.parent_run_id AND parent.` + notTerminal + `)))`

// The deletion of runs: every table holding a part of one, for an array of run IDs ($1),
// the run's row last. PostgreSQL's autovacuum gives the space to new rows.
var deleteRunParts = []string{
	`DELETE FROM run_steps WHERE run_id = ANY($1)`,
	`DELETE FROM hooks WHERE run_id = ANY($1)`,
	`DELETE FROM payloads WHERE run_id = ANY($1)`,
	`DELETE FROM runs WHERE id = ANY($1)`,
}

// The walk of SweepEnded: runs created at or before $1, after ($2, $3), oldest first, $4 of
// them, in runs_created (or runs_workflow_created, of workflow $5). Rows another sweeper
// holds are passed over: it deletes them.
const (
	sweepWalk = `SELECT id, created_at, finished_at, ` + deletable + ` FROM runs
		WHERE created_at <= $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4
		FOR UPDATE SKIP LOCKED`
	sweepWalkWorkflow = `SELECT id, created_at, finished_at, ` + deletable + ` FROM runs
		WHERE workflow_id = $5 AND created_at <= $1 AND (created_at, id) > ($2, $3)
		ORDER BY created_at, id LIMIT $4 FOR UPDATE SKIP LOCKED`
)

// DeleteRun deletes an ended run with its steps, payloads and hooks.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	err := s.write(ctx, func(q querier) error {
		var done bool
		err := q.QueryRow(ctx, `SELECT `+deletable+` FROM runs WHERE id = $1 FOR UPDATE`, id).Scan(&done)
		switch {
		case err != nil:
			return mapErr(ctx, err, runner.ErrNotFound, nil)
		case !done:
			return runner.ErrRunActive
		}
		return deleteRuns(ctx, q, []string{id})
	})
	if err != nil {
		return fmt.Errorf("deleting run %s: %w", id, err)
	}
	return nil
}

// SweepEnded deletes, in one transaction, the runs of one batch of retention.
func (s *Store) SweepEnded(ctx context.Context, p runner.SweepParams) (runner.SweepResult, error) {
	var out runner.SweepResult
	err := s.write(ctx, func(q querier) error {
		var err error
		out, err = sweepRuns(ctx, q, p)
		return err
	})
	if err != nil {
		return runner.SweepResult{}, fmt.Errorf("sweeping ended runs: %w", err)
	}
	return out, nil
}

// walked is one run a sweep examined.
type walked struct {
	key  runner.RunKey
	gone bool // ended at or before the cut
}

// sweepRuns walks one batch of p and deletes the runs it finds ended.
func sweepRuns(ctx context.Context, q querier, p runner.SweepParams) (runner.SweepResult, error) {
	after, afterAt := runner.RunKey{}, int64(-1)
	if p.After != nil {
		after, afterAt = *p.After, nanos(p.After.CreatedAt)
	}
	cut := nanos(p.EndedBefore)
	query, args := sweepWalk, []any{cut, afterAt, after.ID, p.Limit}
	if p.WorkflowID != "" {
		query, args = sweepWalkWorkflow, append(args, p.WorkflowID)
	}
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return runner.SweepResult{}, err
	}
	seen, err := collect(rows, func(row pgx.Row) (walked, error) {
		var w walked
		var created, finished int64
		var done bool
		err := row.Scan(&w.key.ID, &created, &finished, &done)
		w.key.CreatedAt, w.gone = fromNanos(created), done && finished > 0 && finished <= cut
		return w, err
	})
	if err != nil {
		return runner.SweepResult{}, err
	}
	var doomed []string
	for _, w := range seen {
		if w.gone {
			doomed = append(doomed, w.key.ID)
		}
	}
	out := runner.SweepResult{Deleted: len(doomed)}
	if len(seen) == p.Limit && len(seen) > 0 {
		out.Next = &seen[len(seen)-1].key
	}
	if len(doomed) == 0 {
		return out, nil
	}
	return out, deleteRuns(ctx, q, doomed)
}

// deleteRuns deletes the runs ids with every part of them.
func deleteRuns(ctx context.Context, q querier, ids []string) error {
	for _, stmt := range deleteRunParts {
		if _, err := q.Exec(ctx, stmt, ids); err != nil {
			return err
		}
	}
	return nil
}

// Size is the bytes the store's tables and their indexes hold, in the schema the store
// works in: the gorunner_store_bytes gauge.
func (s *Store) Size(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("measuring the database: %w", unreachable(ctx, err))
	}
	return n, nil
}
