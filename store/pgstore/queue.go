package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

// A concurrency key's runs (runner.Store.QueuePlace) are those of one workflow and
// environment with one concurrency_key; runs_queue serves every query below. A write that
// admits or ends a run of a key first takes the key's advisory lock (lockQueue), held
// until it commits: under READ COMMITTED each later statement of the write then sees every
// write of the key committed before, so a count and the write it decides are never apart,
// on any number of hosts.

// inQueue is the condition on runs of the key given as $1 (workflow), $2 (environment),
// $3 (key).
const inQueue = `workflow_id = $1 AND environment = $2 AND concurrency_key = $3`

// active is the condition on the runs that hold a slot of their key.
const active = ` AND status IN ('pending', 'running', 'waiting')`

// lockQueue takes the advisory lock of a key of the store's schema until the transaction
// ends. Two keys sharing a hash only wait for each other.
func (s *Store) lockQueue(ctx context.Context, q querier, wf, env, key string) error {
	_, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		"gorunner.queue/"+s.schema+"/"+wf+"/"+env+"/"+key)
	if err != nil {
		return fmt.Errorf("locking concurrency key %q: %w", key, err)
	}
	return nil
}

// admitQueued inserts p.Run: with no concurrency as given; else pending while fewer than
// its limit of its key's runs are active and none is queued, or queued and not due (then
// the queue is promoted, should a slot be free behind older queued runs). It reports
// whether the run stayed queued.
func (s *Store) admitQueued(ctx context.Context, q querier, p runner.CreateRunParams, st storecodec.RunState) (bool, error) {
	r := p.Run
	c := r.Concurrency
	if c == nil || r.Status.Terminal() {
		return false, insertRun(ctx, q, p, st)
	}
	if err := s.lockQueue(ctx, q, r.WorkflowID, r.Environment, c.Key); err != nil {
		return false, err
	}
	var busy bool
	err := q.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs WHERE `+inQueue+active+`) >= $4
			OR EXISTS (SELECT 1 FROM runs WHERE `+inQueue+` AND status = 'queued')`,
		r.WorkflowID, r.Environment, c.Key, c.Limit).Scan(&busy)
	if err != nil {
		return false, fmt.Errorf("counting the runs of concurrency key %q: %w", c.Key, err)
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
	promoted, err := promote(ctx, q, r.WorkflowID, r.Environment, c.Key, r.CreatedAt)
	return !promoted[r.ID], err
}

// promote makes the oldest queued runs of a key pending, due and started at at, while fewer
// than each one's limit of the key's runs are active, and returns their IDs. The caller
// holds the key's lock.
func promote(ctx context.Context, q querier, wf, env, key string, at time.Time) (map[string]bool, error) {
	promoted := map[string]bool{}
	for {
		var id string
		err := q.QueryRow(ctx, `UPDATE runs SET status = 'pending', wake_at = $4, started_at = $4
			WHERE id = (SELECT id FROM runs WHERE `+inQueue+` AND status = 'queued'
				AND concurrency_limit > (SELECT count(*) FROM runs WHERE `+inQueue+active+`)
				ORDER BY created_at, id LIMIT 1)
			RETURNING id`, wf, env, key, nanos(at)).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return promoted, nil
		}
		if err != nil {
			return nil, fmt.Errorf("promoting a queued run of concurrency key %q: %w", key, err)
		}
		promoted[id] = true
	}
}

// promoteAfter promotes the queue of the key of a run that just ended (nil: no key).
func (s *Store) promoteAfter(ctx context.Context, q querier, wf, env string, key *string, at time.Time) error {
	if key == nil {
		return nil
	}
	if err := s.lockQueue(ctx, q, wf, env, *key); err != nil {
		return err
	}
	_, err := promote(ctx, q, wf, env, *key, at)
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
	err := s.pool.QueryRow(ctx, `SELECT
			ARRAY(SELECT id FROM runs WHERE `+inQueue+active+` ORDER BY id LIMIT $6),
			(SELECT count(*) FROM runs WHERE `+inQueue+` AND status = 'queued' AND (created_at, id) < ($4, $5))`,
		r.WorkflowID, r.Environment, r.Concurrency.Key, nanos(r.CreatedAt), r.ID, runner.MaxQueueActiveShown).Scan(&p.Active, &p.Ahead)
	if err != nil {
		return p, fmt.Errorf("reading the queue of run %s: %w", r.ID, unreachable(ctx, err))
	}
	if len(p.Active) == 0 {
		p.Active = nil
	}
	return p, nil
}
