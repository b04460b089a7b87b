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

// ClaimRuns leases up to p.Limit due runs to p.Owner, the earliest due first. The runs are
// selected FOR UPDATE SKIP LOCKED and leased by the same UPDATE, so claimers on any number
// of hosts never wait for each other nor get the same run. Claiming clears poke_at: the
// claimer sees every wake-up asked for until now.
func (s *Store) ClaimRuns(ctx context.Context, p runner.ClaimRunsParams) ([]runner.Claimed, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `UPDATE runs SET lease_owner = $1, lease_until = $2, poke_at = 0,
			claims = claims + 1
		WHERE id IN (SELECT id FROM runs WHERE wake_at > 0 AND `+notTerminal+` AND wake_at <= $3
			AND (lease_owner = '' OR lease_until < $3) AND (status != 'queued' OR cancel_requested)
			ORDER BY wake_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
		RETURNING `+runSelect, p.Owner, nanos(p.LeaseUntil), nanos(p.Now), p.Limit)
	var runs []*runner.Run
	if err == nil {
		runs, err = collect(rows, scanRun)
	}
	if err != nil {
		return nil, fmt.Errorf("claiming runs for %s: %w", p.Owner, unreachable(ctx, err))
	}
	return storecodec.Claimed(runs, p.Owner), nil
}

// RenewLeases extends p.Leases until p.Until. A run whose lease owner has changed (or which
// ended, dropping its lease) is reported lost; a held run whose cancel was requested is
// reported cancelled. Leases p.Held refuses are an error and nothing is written.
func (s *Store) RenewLeases(ctx context.Context, p runner.RenewLeasesParams) (lost, cancelled []string, err error) {
	owner, runIDs, err := p.Held()
	if err != nil || len(runIDs) == 0 {
		return nil, nil, err
	}
	held := make(map[string]bool, len(runIDs))
	rows, err := s.pool.Query(ctx, `UPDATE runs SET lease_until = $1 WHERE lease_owner = $2 AND id = ANY($3)
		RETURNING id, cancel_requested`, nanos(p.Until), owner, runIDs)
	if err == nil {
		var id string
		var cancel bool
		_, err = pgx.ForEachRow(rows, []any{&id, &cancel}, func() error {
			held[id] = cancel
			return nil
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("renewing leases of %s: %w", owner, unreachable(ctx, err))
	}
	lost, cancelled = storecodec.LeaseOutcome(runIDs, held)
	return lost, cancelled, nil
}

// SaveRun writes the mutable part of a run (status, output, error, the step records
// opts.Steps names, waitingOn, startedAt, finishedAt, wakeAt, and a cancel request) if lease
// is a lease on r its owner still holds, and sets its claims count to 1 (its own) unless
// opts.AttemptStart. Identity and admission fields never change. A wake-up asked from
// outside since the claim is kept: WakeAt becomes the earlier of the two. A terminal status
// releases the run's tokens and queued payloads, drops the lease, wakes the parent and
// promotes the queue of the run's concurrency key, at r.FinishedAt (or the wall clock when
// unset).
//
// A save that consumes no payload, ends no run that payloads still wait for and promotes no
// queue is one statement (saveAtOnce): one round trip and one commit. Any other save, and
// one that statement did not write (a lease lost, payloads left), is a transaction of
// several.
func (s *Store) SaveRun(ctx context.Context, lease runner.Lease, r *runner.Run, opts runner.SaveOptions) error {
	if err := lease.Check(r.ID); err != nil {
		return fmt.Errorf("saving run %s: %w", r.ID, err)
	}
	st, err := storecodec.EncodeRunState(r, opts.Steps)
	if err != nil {
		return fmt.Errorf("saving run %s: %w", r.ID, err)
	}
	args := saveArgs(lease, r, st, opts)
	if opts.ConsumePayload <= 0 && !(r.Status.Terminal() && r.Concurrency != nil) {
		saved, err := s.saveAtOnce(ctx, args)
		if err != nil {
			return fmt.Errorf("saving run %s: %w", r.ID, unreachable(ctx, err))
		}
		if saved {
			return nil
		}
	}
	err = s.write(ctx, func(q querier) error {
		var parent, wf, env string
		var queue *string
		if err := q.QueryRow(ctx, `UPDATE runs SET `+saveSet+` WHERE id = $10 AND lease_owner = $11
			RETURNING parent_run_id, workflow_id, environment, concurrency_key`, args[:saveRowArgs]...).Scan(&parent, &wf, &env, &queue); err != nil {
			return mapErr(ctx, err, runner.ErrLeaseLost, nil)
		}
		if err := writeSteps(ctx, q, r.ID, st.Steps); err != nil {
			return err
		}
		if err := consumePayload(ctx, q, r.ID, opts.ConsumePayload); err != nil {
			return err
		}
		if !r.Status.Terminal() {
			return nil
		}
		var err error
		if r.Undelivered, err = keepUndelivered(ctx, q, r.ID); err != nil {
			return err
		}
		at := endTime(r)
		if err := finishRun(ctx, q, r.ID, parent, at); err != nil {
			return err
		}
		return s.promoteAfter(ctx, q, wf, env, queue, at)
	})
	if err != nil {
		return fmt.Errorf("saving run %s: %w", r.ID, err)
	}
	return nil
}

// saveSet is what a save writes of a run's row ($1…$9, $12 of saveArgs).
const saveSet = `status = $1, output = $2, error = $3,
		waiting_on = $4, started_at = $5, finished_at = $6,
		wake_at = CASE WHEN poke_at > 0 AND ($7::bigint = 0 OR poke_at < $7::bigint) THEN poke_at ELSE $7::bigint END,
		cancel_requested = cancel_requested OR $8,
		lease_owner = CASE WHEN $9 THEN '' ELSE lease_owner END,
		lease_until = CASE WHEN $9 THEN 0 ELSE lease_until END,
		claims = CASE WHEN $12 THEN claims ELSE 1 END`

// saveRowArgs is how many of saveArgs the row's update takes.
const saveRowArgs = 12

// saveArgs are a save's arguments: the row's ($1…$12: saveSet's, $10 the run, $11 the
// lease's owner), then saveAtOnceSQL's ($13, $14 the step records, $15 the end time).
func saveArgs(lease runner.Lease, r *runner.Run, st storecodec.RunState, opts runner.SaveOptions) []any {
	steps := stepsArgs(r.ID, st.Steps)
	return []any{r.Status, []byte(r.Output), st.Error, st.WaitingOn, nanosPtr(r.StartedAt),
		nanosPtr(r.FinishedAt), nanos(r.WakeAt), r.CancelRequested, r.Status.Terminal(), r.ID, lease.Owner(),
		opts.AttemptStart, steps[1], steps[2], nanos(endTime(r))}
}

// endTime is when a run that ends ends: its FinishedAt, or the wall clock when unset.
func endTime(r *runner.Run) time.Time {
	if r.FinishedAt != nil {
		return *r.FinishedAt
	}
	return time.Now()
}

// saveAtOnce writes a save that consumes no payload in one statement (saveAtOnceSQL) and
// reports whether it did: not when the lease is not held, nor when the run ends with
// payloads queued for it (what is kept of those is the transaction's to write).
func (s *Store) saveAtOnce(ctx context.Context, args []any) (bool, error) {
	n, err := affected(s.pool.Exec(ctx, saveAtOnceSQL, args...))
	return n == 1, err
}

// saveAtOnceSQL is a whole save in one statement: the row's update, which writes only while
// the lease is held (and, for an end, no payload waits), and, only when it wrote, the step
// records and, for an end, the release of the run's tokens and its parent's wake-up (as
// finishRun; a terminal run has no payloads left to drop).
const saveAtOnceSQL = `WITH saved AS (
		UPDATE runs SET ` + saveSet + `
		WHERE id = $10 AND lease_owner = $11
			AND NOT ($9 AND EXISTS (SELECT 1 FROM payloads WHERE run_id = $10))
		RETURNING parent_run_id),
	steps AS (
		INSERT INTO run_steps (run_id, idx, data)
		SELECT $10, i, d FROM unnest($13::integer[], $14::bytea[]) AS s (i, d) WHERE EXISTS (SELECT 1 FROM saved)
		ON CONFLICT (run_id, idx) DO UPDATE SET data = excluded.data),
	tokens AS (
		DELETE FROM hooks WHERE $9 AND run_id = $10 AND EXISTS (SELECT 1 FROM saved)),
	parent AS (
		UPDATE runs SET
			wake_at = CASE WHEN wake_at = 0 OR wake_at > $15 THEN $15 ELSE wake_at END,
			poke_at = CASE WHEN poke_at = 0 OR poke_at > $15 THEN $15 ELSE poke_at END
		WHERE $9 AND id = (SELECT parent_run_id FROM saved) AND ` + notTerminal + `)
	SELECT FROM saved`

// consumePayload deletes payload seq of run; one already gone fails the save, so a payload
// is never delivered twice.
func consumePayload(ctx context.Context, q querier, runID string, seq int64) error {
	if seq <= 0 {
		return nil
	}
	n, err := affected(q.Exec(ctx, `DELETE FROM payloads WHERE seq = $1 AND run_id = $2`, seq, runID))
	if err == nil && n == 0 {
		err = runner.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("consuming payload %d: %w", seq, err)
	}
	return nil
}

// keepUndelivered keeps on run runID, in the transaction that ends it, the payloads still
// queued for its tokens (the oldest runner.MaxUndeliveredPayloads, and how many more),
// before finishRun drops them, and returns what it kept (nil: none).
func keepUndelivered(ctx context.Context, q querier, runID string) (*runner.Undelivered, error) {
	rows, err := q.Query(ctx, `SELECT token, payload, count(*) OVER () FROM payloads WHERE run_id = $1
		ORDER BY seq LIMIT $2`, runID, runner.MaxUndeliveredPayloads)
	if err != nil {
		return nil, fmt.Errorf("reading undelivered payloads: %w", err)
	}
	defer rows.Close()
	u, total := &runner.Undelivered{}, int64(0)
	for rows.Next() {
		var p runner.UndeliveredPayload
		if err := rows.Scan(&p.Token, &p.Payload, &total); err != nil {
			return nil, fmt.Errorf("reading undelivered payloads: %w", err)
		}
		u.Payloads = append(u.Payloads, p)
	}
	if err := rows.Err(); err != nil || total == 0 {
		return nil, err
	}
	u.Omitted = int(total) - len(u.Payloads)
	b, err := storecodec.EncodeUndelivered(u)
	if err == nil {
		_, err = q.Exec(ctx, `UPDATE runs SET undelivered = $1 WHERE id = $2`, b, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("keeping undelivered payloads: %w", err)
	}
	return u, nil
}

// finishRun does what a run's end implies, in the transaction that ends it: its tokens
// and undelivered payloads go, and its parent (if any) is due at the latest at at.
func finishRun(ctx context.Context, q querier, runID, parentID string, at time.Time) error {
	if _, err := q.Exec(ctx, `DELETE FROM hooks WHERE run_id = $1`, runID); err != nil {
		return fmt.Errorf("releasing tokens: %w", err)
	}
	if _, err := q.Exec(ctx, `DELETE FROM payloads WHERE run_id = $1`, runID); err != nil {
		return fmt.Errorf("dropping payloads: %w", err)
	}
	if parentID == "" {
		return nil
	}
	if _, err := wakeRun(ctx, q, parentID, at); err != nil {
		return fmt.Errorf("waking parent %s: %w", parentID, err)
	}
	return nil
}

// ReleaseRun drops lease and sets its run's claims count back to 0. A lease already gone
// is not an error.
func (s *Store) ReleaseRun(ctx context.Context, lease runner.Lease) error {
	if err := lease.Check(lease.RunID()); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `UPDATE runs SET lease_owner = '', lease_until = 0, claims = 0
		WHERE id = $1 AND lease_owner = $2`, lease.RunID(), lease.Owner())
	if err != nil {
		return fmt.Errorf("releasing run %s: %w", lease.RunID(), unreachable(ctx, err))
	}
	return nil
}

// RequestCancel marks a run for cancellation and makes it due now; the worker that holds
// or next claims it ends it. A finished run → runner.ErrFinished.
func (s *Store) RequestCancel(ctx context.Context, runID string, now time.Time) (*runner.Run, error) {
	var out *runner.Run
	err := s.write(ctx, func(q querier) error {
		n, err := affected(q.Exec(ctx, `UPDATE runs SET cancel_requested = true WHERE id = $1 AND `+notTerminal, runID))
		if err != nil {
			return err
		}
		if n == 0 {
			return finishedOrMissing(ctx, q, runID)
		}
		if _, err := wakeRun(ctx, q, runID, now); err != nil {
			return err
		}
		out, err = getRun(ctx, q, runID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cancelling run %s: %w", runID, err)
	}
	return out, nil
}

// finishedOrMissing tells why a run could not be changed: runner.ErrFinished or
// runner.ErrNotFound.
func finishedOrMissing(ctx context.Context, q querier, runID string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1`, runID).Scan(&one)
	if err == nil {
		return runner.ErrFinished
	}
	return mapErr(ctx, err, runner.ErrNotFound, nil)
}

// WakeRun makes a non-terminal run due at t if that is sooner than its WakeAt. A finished
// run is left alone; an unknown one → runner.ErrNotFound.
func (s *Store) WakeRun(ctx context.Context, runID string, t time.Time) error {
	n, err := wakeRun(ctx, s.pool, runID, t)
	if err == nil && n == 0 {
		if err = finishedOrMissing(ctx, s.pool, runID); errors.Is(err, runner.ErrFinished) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("waking run %s: %w", runID, unreachable(ctx, err))
	}
	return nil
}

// wakeRun moves wake_at and poke_at of a non-terminal run to t if t is sooner, and returns
// how many runs it changed (0 or 1).
func wakeRun(ctx context.Context, q querier, runID string, t time.Time) (int64, error) {
	return affected(q.Exec(ctx, wakeRunSQL, nanos(t), runID))
}

// wakeRunSQL is wakeRun's statement ($1 the time, $2 the run).
const wakeRunSQL = `UPDATE runs SET
		wake_at = CASE WHEN wake_at = 0 OR wake_at > $1 THEN $1 ELSE wake_at END,
		poke_at = CASE WHEN poke_at = 0 OR poke_at > $1 THEN $1 ELSE poke_at END
	WHERE id = $2 AND ` + notTerminal
