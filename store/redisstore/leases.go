package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

// ClaimRuns leases up to p.Limit due runs to p.Owner, the earliest due first. The selection
// and the lease are one script, so two claimers (in this process or another) never get
// the same run. Claiming clears poke_at: the claimer sees every wake-up asked until now.
func (s *Store) ClaimRuns(ctx context.Context, p runner.ClaimRunsParams) ([]runner.Claimed, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	res, err := s.run(ctx, s.scripts.claimRuns, nil, []string{s.k.runsDue()},
		p.Owner, ts(p.Now), score(p.Now), ts(p.LeaseUntil), p.Limit, s.k.runPrefix())
	if err != nil {
		return nil, fmt.Errorf("claiming runs for %s: %w", p.Owner, err)
	}
	// A run whose version record is gone is claimed without its definition, for the worker
	// to end it rather than have it come back due at every lease's end.
	runs, err := s.runsByID(ctx, replyStrings(res))
	if err != nil {
		return nil, fmt.Errorf("claiming runs for %s: %w", p.Owner, err)
	}
	return storecodec.Claimed(runs, p.Owner), nil
}

// replyStrings reads a script's array of strings.
func replyStrings(res any) []string {
	arr, _ := res.([]any)
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// RenewLeases extends p.Leases until p.Until. A run whose lease owner has changed (or which
// ended, dropping its lease) is reported lost; a held run whose cancel was requested is
// reported cancelled. Leases p.Held refuses are an error and nothing is written.
func (s *Store) RenewLeases(ctx context.Context, p runner.RenewLeasesParams) (lost, cancelled []string, err error) {
	owner, runIDs, err := p.Held()
	if err != nil || len(runIDs) == 0 {
		return nil, nil, err
	}
	args := append([]any{owner, ts(p.Until), s.k.runPrefix()}, anyStrings(runIDs)...)
	res, err := s.run(ctx, s.scripts.renewLeases, nil, []string{s.k.runsDue()}, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("renewing leases of %s: %w", owner, err)
	}
	held := map[string]bool{}
	pairs := replyStrings(res)
	for i := 0; i+1 < len(pairs); i += 2 {
		held[pairs[i]] = pairs[i+1] == "1"
	}
	lost, cancelled = storecodec.LeaseOutcome(runIDs, held)
	return lost, cancelled, nil
}

// SaveRun writes the fields a worker changes (status, output, error, the step records
// opts.Steps names, waitingOn, startedAt, finishedAt, wakeAt, and a cancel request) if lease
// is a lease on r its owner still holds, and sets its claims count to 1 (its own) unless
// opts.AttemptStart. Identity and admission fields never change. A wake-up asked from outside since the claim is kept:
// WakeAt becomes the earlier of the two. A terminal status releases the run's tokens and
// queued payloads, drops the lease and wakes the parent, at r.FinishedAt (or the wall clock
// when unset), keeping those payloads on the run (Run.Undelivered, set on r too).
// Consuming a payload already consumed → runner.ErrNotFound, nothing written.
// A run stored with its steps in one field gets them all written, a field each.
func (s *Store) SaveRun(ctx context.Context, lease runner.Lease, r *runner.Run, opts runner.SaveOptions) error {
	err := lease.Check(r.ID)
	if err == nil {
		err = s.saveRun(ctx, lease.Owner(), r, opts)
	}
	if errors.Is(err, errAllSteps) {
		opts.Steps = nil
		err = s.saveRun(ctx, lease.Owner(), r, opts)
	}
	return wrapErr(fmt.Sprintf("saving run %s", r.ID), err)
}

func (s *Store) saveRun(ctx context.Context, owner string, r *runner.Run, opts runner.SaveOptions) error {
	st, err := storecodec.EncodeRunState(r, opts.Steps)
	if err != nil {
		return err
	}
	end := time.Now()
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	k := s.k
	queue, active := "", ""
	if c := r.Concurrency; c != nil {
		scope := concurrencyScope(*c, r.WorkflowID, r.Environment)
		queue, active = k.concurrencyQueue(scope), k.concurrencyActive(scope)
	}
	args := append([]any{r.ID, owner, string(r.Status), []byte(r.Output), st.Error, boolArg(opts.Steps == nil),
		st.WaitingOn, tsPtr(r.StartedAt), tsPtr(r.FinishedAt), ts(r.WakeAt), boolArg(r.CancelRequested),
		max(opts.ConsumePayload, 0), ts(end), k.runsStatusPrefix(), k.hookPrefix(), k.queuePrefix(), k.runPrefix(),
		boolArg(opts.AttemptStart), runner.MaxUndeliveredPayloads, queue, active}, stepFields(st.Steps)...)
	res, err := s.run(ctx, s.scripts.saveRun, runnerErrs,
		[]string{k.run(r.ID), k.runsDue(), k.payloads(r.ID), k.runHooks(r.ID)}, args...)
	if kept, ok := res.(string); ok && err == nil && kept != "OK" {
		r.Undelivered, err = storecodec.DecodeUndelivered([]byte(kept))
	}
	return err
}

// ReleaseRun drops lease and sets its run's claims count back to 0. A lease already gone
// is not an error.
func (s *Store) ReleaseRun(ctx context.Context, lease runner.Lease) error {
	if err := lease.Check(lease.RunID()); err != nil {
		return err
	}
	id := lease.RunID()
	_, err := s.run(ctx, s.scripts.releaseRun, nil, []string{s.k.run(id), s.k.runsDue()}, id, lease.Owner())
	return wrapErr(fmt.Sprintf("releasing run %s", id), err)
}

// RequestCancel marks a run for cancellation and makes it due now; the worker that holds
// or next claims it ends it. A finished run → runner.ErrFinished.
func (s *Store) RequestCancel(ctx context.Context, runID string, now time.Time) (*runner.Run, error) {
	res, err := s.run(ctx, s.scripts.requestCancel, runnerErrs, []string{s.k.run(runID), s.k.runsDue()}, runID, ts(now))
	var r *runner.Run
	if err == nil {
		r, err = s.decodeOneRun(ctx, flatMap(res))
	}
	if err != nil {
		return nil, fmt.Errorf("cancelling run %s: %w", runID, err)
	}
	return r, nil
}

// WakeRun makes a non-terminal run due at t if that is sooner than its WakeAt. A finished
// run is left alone; an unknown one → runner.ErrNotFound.
func (s *Store) WakeRun(ctx context.Context, runID string, t time.Time) error {
	_, err := s.run(ctx, s.scripts.wakeRun, runnerErrs, []string{s.k.run(runID), s.k.runsDue()}, runID, ts(t))
	return wrapErr(fmt.Sprintf("waking run %s", runID), err)
}
