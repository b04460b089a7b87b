package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

// A concurrency key's runs (runner.Store.QueuePlace) are those of one workflow and
// environment with one concurrency_key; runs_queue serves every query below. Their writes
// are the admission's or the end's own transaction, which SQLite serialises across
// processes (BEGIN IMMEDIATE): a count and the write it decides are never apart.

// inQueue is the condition on runs of the key given as ?1 (workflow), ?2 (environment),
// ?3 (key).
const inQueue = `workflow_id = ?1 AND environment = ?2 AND concurrency_key = ?3`

// active is the condition on the runs that hold a slot of their key.
const active = ` AND status IN ('pending', 'running', 'waiting')`

// admitQueued inserts p.Run: with no concurrency as given; else pending while fewer than
// its limit of its key's runs are active and none is queued, or queued and not due (then
// the queue is promoted, should a slot be free behind older queued runs). It reports
// whether the run stayed queued.
func admitQueued(ctx context.Context, q querier, p runner.CreateRunParams, st storecodec.RunState) (bool, error) {
	r := p.Run
	if r.Concurrency == nil || r.Status.Terminal() {
		return false, insertRun(ctx, q, p, st)
	}
	var busy bool
	err := q.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM runs WHERE `+inQueue+active+`) >= ?4
			OR EXISTS (SELECT 1 FROM runs WHERE `+inQueue+` AND status = 'queued')`,
		r.WorkflowID, r.Environment, r.Concurrency.Key, r.Concurrency.Limit).Scan(&busy)
	if err != nil {
		return false, fmt.Errorf("counting the runs of concurrency key %q: %w", r.Concurrency.Key, err)
	}
	if !busy {
		return false, insertRun(ctx, q, p, st)
	}
	queued := *r
	queued.Status, queued.WakeAt, queued.StartedAt = runner.StatusQueued, time.Time{}, nil
	p.Run, p.Owner = &queued, ""
	if err := insertRun(ctx, q, p, st); err != nil {
		return false, err
	}
	promoted, err := promote(ctx, q, r.WorkflowID, r.Environment, r.Concurrency.Key, r.CreatedAt)
	return !promoted[r.ID], err
}

// promote makes the oldest queued runs of a key pending, due and started at at, while fewer
// than each one's limit of the key's runs are active, and returns their IDs.
func promote(ctx context.Context, q querier, wf, env, key string, at time.Time) (map[string]bool, error) {
	promoted := map[string]bool{}
	for {
		var id string
		err := q.QueryRowContext(ctx, `SELECT id FROM runs WHERE `+inQueue+` AND status = 'queued'
				AND concurrency_limit > (SELECT count(*) FROM runs WHERE `+inQueue+active+`)
			ORDER BY created_at, id LIMIT 1`, wf, env, key).Scan(&id)
		if err == sql.ErrNoRows {
			return promoted, nil
		}
		if err == nil {
			_, err = q.ExecContext(ctx, `UPDATE runs SET status = 'pending', wake_at = ?1, started_at = ?1 WHERE id = ?2`, nanos(at), id)
		}
		if err != nil {
			return nil, fmt.Errorf("promoting a queued run of concurrency key %q: %w", key, err)
		}
		promoted[id] = true
	}
}

// promoteAfter promotes the queue of the key of a run that just ended (no key: nothing).
func promoteAfter(ctx context.Context, q querier, wf, env string, key sql.NullString, at time.Time) error {
	if !key.Valid {
		return nil
	}
	_, err := promote(ctx, q, wf, env, key.String, at)
	return err
}

// QueuePlace reads where queued run r stands: its key's active runs (at most
// runner.MaxQueueActiveShown, in ID order) and the count of its older queued runs, in one
// snapshot.
func (s *Store) QueuePlace(ctx context.Context, r *runner.Run) (runner.QueuePlace, error) {
	var p runner.QueuePlace
	if r.Concurrency == nil {
		return p, nil
	}
	args := []any{r.WorkflowID, r.Environment, r.Concurrency.Key, nanos(r.CreatedAt), r.ID, runner.MaxQueueActiveShown}
	rows, err := s.q().QueryContext(ctx, `SELECT id, 0 FROM (SELECT id FROM runs WHERE `+inQueue+active+` ORDER BY id LIMIT ?6)
		UNION ALL SELECT '', count(*) FROM runs WHERE `+inQueue+` AND status = 'queued' AND (created_at, id) < (?4, ?5)`, args...)
	if err != nil {
		return p, fmt.Errorf("reading the queue of run %s: %w", r.ID, unavailable(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var ahead int
		if err := rows.Scan(&id, &ahead); err != nil {
			return p, err
		}
		if id != "" {
			p.Active = append(p.Active, id)
		} else {
			p.Ahead = ahead
		}
	}
	return p, rows.Err()
}
