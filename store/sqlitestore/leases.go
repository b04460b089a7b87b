package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

// ClaimRuns leases up to p.Limit due runs to p.Owner, the earliest due first. The selection and
// the lease are one UPDATE inside a write transaction, so two claimers (in this process or
// another) never get the same run. Claiming clears poke_at: the claimer sees every wake-up
// asked for until now.
func (s *Store) ClaimRuns(ctx context.Context, p runner.ClaimRunsParams) ([]runner.Claimed, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	if due, err := s.anyDue(ctx, p.Now); err != nil || !due {
		return nil, err
	}
	var runs []*runner.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := s.in(tx).QueryContext(ctx, `UPDATE runs SET lease_owner = ?1, lease_until = ?2, poke_at = 0,
				claims = claims + 1
			WHERE id IN (SELECT id FROM runs WHERE `+claimable+` ORDER BY wake_at, id LIMIT ?4)
			RETURNING `+runSelect, p.Owner, nanos(p.LeaseUntil), nanos(p.Now), p.Limit)
		if err != nil {
			return err
		}
		runs, err = collect(rows, scanRun)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claiming runs for %s: %w", p.Owner, err)
	}
	return storecodec.Claimed(runs, p.Owner), nil
}

// claimable selects the runs due at ?3 whose lease is free or expired, through the runs_due
// index.
// A queued run (runner.StatusQueued) is claimed only once its cancel was asked.
const claimable = `wake_at > 0 AND ` + notTerminal + ` AND wake_at <= ?3 AND (lease_owner = '' OR lease_until < ?3)
	AND (status != 'queued' OR cancel_requested)`

// anyDue reports whether some run is claimable at now: a read, so that a worker's poll
// finding nothing due, which is most polls of an idle or busy-but-caught-up process,
// costs no write transaction and no fsync.
func (s *Store) anyDue(ctx context.Context, now time.Time) (bool, error) {
	var due bool
	// claimable's time is ?3, the claim's own numbering; ?1 and ?2 are left unset.
	err := s.q().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE `+claimable+`)`,
		nil, nil, nanos(now)).Scan(&due)
	if err != nil {
		return false, fmt.Errorf("looking for due runs: %w", unavailable(err))
	}
	return due, nil
}

// RenewLeases extends p.Leases until p.Until. A run whose lease owner has changed (or which
// ended, dropping its lease) is reported lost; a held run whose cancel was requested is
// reported cancelled. Leases p.Held refuses are an error and nothing is written.
func (s *Store) RenewLeases(ctx context.Context, p runner.RenewLeasesParams) (lost, cancelled []string, err error) {
	owner, runIDs, err := p.Held()
	if err != nil || len(runIDs) == 0 {
		return nil, nil, err
	}
	ids, err := json.Marshal(runIDs)
	if err != nil {
		return nil, nil, err
	}
	held := make(map[string]bool, len(runIDs))
	err = s.write(ctx, func(tx *sql.Tx) error {
		clear(held) // a write may run again
		rows, err := s.in(tx).QueryContext(ctx, `UPDATE runs SET lease_until = ?
			WHERE lease_owner = ? AND id IN (SELECT value FROM json_each(?))
			RETURNING id, cancel_requested`, nanos(p.Until), owner, string(ids))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var cancel bool
			if err := rows.Scan(&id, &cancel); err != nil {
				return err
			}
			held[id] = cancel
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("renewing leases of %s: %w", owner, err)
	}
	lost, cancelled = storecodec.LeaseOutcome(runIDs, held)
	return lost, cancelled, nil
}

// SaveRun writes the mutable part of a run (status, output, error, the step records
// opts.Steps names, waitingOn, startedAt, finishedAt, wakeAt, and a cancel request) if lease
// is a lease on r its owner still holds, and sets its claims count to 1 (its own) unless opts.AttemptStart. Identity
// and admission fields (workflow, version, input, definition, tokens, parent) never change.
// A wake-up asked from outside since the claim is kept: WakeAt becomes the earlier of the
// two. A terminal status releases the run's tokens and queued payloads, drops the lease,
// wakes the parent and promotes the queue of the run's concurrency key, at r.FinishedAt (or
// the wall clock when unset).
func (s *Store) SaveRun(ctx context.Context, lease runner.Lease, r *runner.Run, opts runner.SaveOptions) error {
	if err := lease.Check(r.ID); err != nil {
		return fmt.Errorf("saving run %s: %w", r.ID, err)
	}
	st, err := storecodec.EncodeRunState(r, opts.Steps)
	if err != nil {
		return fmt.Errorf("saving run %s: %w", r.ID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var parent, wf, env string
		var queue sql.NullString
		err := s.in(tx).QueryRowContext(ctx, `UPDATE runs SET status = ?1, output = ?2, error = ?3,
				waiting_on = ?4, started_at = ?5, finished_at = ?6,
				wake_at = CASE WHEN poke_at > 0 AND (?7 = 0 OR poke_at < ?7) THEN poke_at ELSE ?7 END,
				cancel_requested = MAX(cancel_requested, ?8),
				lease_owner = CASE WHEN ?9 THEN '' ELSE lease_owner END,
				lease_until = CASE WHEN ?9 THEN 0 ELSE lease_until END,
				claims = CASE WHEN ?12 THEN claims ELSE 1 END
			WHERE id = ?10 AND lease_owner = ?11
			RETURNING parent_run_id, workflow_id, environment, concurrency_key`,
			r.Status, []byte(r.Output), st.Error, st.WaitingOn, nanosPtr(r.StartedAt),
			nanosPtr(r.FinishedAt), nanos(r.WakeAt), r.CancelRequested, r.Status.Terminal(), r.ID, lease.Owner(),
			opts.AttemptStart,
		).Scan(&parent, &wf, &env, &queue)
		if err != nil {
			return mapErr(err, runner.ErrLeaseLost, nil)
		}
		if err := writeSteps(ctx, s.in(tx), r.ID, st.Steps); err != nil {
			return err
		}
		if err := consumePayload(ctx, s.in(tx), r.ID, opts.ConsumePayload); err != nil {
			return err
		}
		if !r.Status.Terminal() {
			return nil
		}
		at := time.Now()
		if r.FinishedAt != nil {
			at = *r.FinishedAt
		}
		if r.Undelivered, err = keepUndelivered(ctx, s.in(tx), r.ID); err != nil {
			return err
		}
		if err := finishRun(ctx, s.in(tx), r.ID, parent, at); err != nil {
			return err
		}
		return promoteAfter(ctx, s.in(tx), wf, env, queue, at)
	})
	if err != nil {
		return fmt.Errorf("saving run %s: %w", r.ID, err)
	}
	return nil
}

// consumePayload deletes payload seq of run; one already gone fails the save, so a payload
// is never delivered twice.
func consumePayload(ctx context.Context, q querier, runID string, seq int64) error {
	if seq <= 0 {
		return nil
	}
	n, err := affected(q.ExecContext(ctx, `DELETE FROM payloads WHERE seq = ? AND run_id = ?`, seq, runID))
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
	rows, err := q.QueryContext(ctx, `SELECT token, payload, count(*) OVER () FROM payloads WHERE run_id = ?
		ORDER BY seq LIMIT ?`, runID, runner.MaxUndeliveredPayloads)
	if err != nil {
		return nil, fmt.Errorf("reading undelivered payloads: %w", err)
	}
	defer rows.Close()
	u, total := &runner.Undelivered{}, 0
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
	u.Omitted = total - len(u.Payloads)
	b, err := storecodec.EncodeUndelivered(u)
	if err == nil {
		_, err = q.ExecContext(ctx, `UPDATE runs SET undelivered = ? WHERE id = ?`, b, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("keeping undelivered payloads: %w", err)
	}
	return u, nil
}

// finishRun does what a run's end implies, in the transaction that ends it: its tokens
// and undelivered payloads go, and its parent (if any) is due at the latest at at.
func finishRun(ctx context.Context, q querier, runID, parentID string, at time.Time) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM hooks WHERE run_id = ?`, runID); err != nil {
		return fmt.Errorf("releasing tokens: %w", err)
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM payloads WHERE run_id = ?`, runID); err != nil {
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
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.in(tx).ExecContext(ctx, `UPDATE runs SET lease_owner = '', lease_until = 0, claims = 0
			WHERE id = ? AND lease_owner = ?`, lease.RunID(), lease.Owner())
		if err != nil {
			return fmt.Errorf("releasing run %s: %w", lease.RunID(), err)
		}
		return nil
	})
}

// RequestCancel marks a run for cancellation and makes it due now; the worker that holds
// or next claims it ends it. A finished run → runner.ErrFinished.
func (s *Store) RequestCancel(ctx context.Context, runID string, now time.Time) (*runner.Run, error) {
	var out *runner.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(s.in(tx).ExecContext(ctx, `UPDATE runs SET cancel_requested = 1 WHERE id = ? AND `+notTerminal, runID))
		if err != nil {
			return err
		}
		if n == 0 {
			return finishedOrMissing(ctx, s.in(tx), runID)
		}
		if _, err := wakeRun(ctx, s.in(tx), runID, now); err != nil {
			return err
		}
		out, err = getRun(ctx, s.in(tx), runID)
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
	err := q.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
	if err == nil {
		return runner.ErrFinished
	}
	return mapErr(err, runner.ErrNotFound, nil)
}

// WakeRun makes a non-terminal run due at t if that is sooner than its WakeAt. A finished
// run is left alone; an unknown one → runner.ErrNotFound.
func (s *Store) WakeRun(ctx context.Context, runID string, t time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		n, err := wakeRun(ctx, s.in(tx), runID, t)
		if err != nil || n > 0 {
			return err
		}
		if err := finishedOrMissing(ctx, s.in(tx), runID); !errors.Is(err, runner.ErrFinished) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waking run %s: %w", runID, err)
	}
	return nil
}

// wakeRun moves wake_at and poke_at of a non-terminal run to t if t is sooner, and returns
// how many runs it changed (0 or 1).
func wakeRun(ctx context.Context, q querier, runID string, t time.Time) (int64, error) {
	return affected(q.ExecContext(ctx, `UPDATE runs SET
			wake_at = CASE WHEN wake_at = 0 OR wake_at > ?1 THEN ?1 ELSE wake_at END,
			poke_at = CASE WHEN poke_at = 0 OR poke_at > ?1 THEN ?1 ELSE poke_at END
		WHERE id = ?2 AND `+notTerminal, nanos(t), runID))
}
