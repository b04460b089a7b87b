package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/idempotency"
)

// CreateRunParams asks a Store to admit a run in one write (one transaction or script).
type CreateRunParams struct {
	// Run is the new run, due at Run.WakeAt.
	Run *Run
	// Start, when set, is the start token claimed in the same write: owned by another
	// active run → *TokenConflictError and nothing is written.
	Start *Hook
	// Owner, when set, takes the run's lease until LeaseUntil in the same write, counted
	// in Run.Claims as a ClaimRuns claim would be, so that the admitting engine works the
	// run at once without claiming it.
	Owner      string
	LeaseUntil time.Time
	// Key, when set, claims an idempotency key and keeps its answer (which names the run)
	// in the same write. A live key or a full scope is reported as Claim reports it and
	// nothing is written.
	Key *idempotency.KeyWrite
}

// CreateRunResult is what CreateRun did: the key's outcome as idempotency.Store.Claim
// reports it and, when the run was written with CreateRunParams.Owner set, its lease.
type CreateRunResult struct {
	idempotency.ClaimResult
	Lease Lease
}

// Admission is a run built and checked in memory but not yet written (see Prepare), so
// that its answer can be made before the one write that commits both.
type Admission struct {
	// Run is the run the admission creates.
	Run   *Run
	c     *compiled
	start *Hook
}

// Prepare resolves the workflow, validates the input and builds the new run with its
// step records and start token, writing nothing. An invalid input is an *InputError.
func (e *Engine) Prepare(ctx context.Context, p SubmitParams) (*Admission, error) {
	env, err := environment(p.Environment)
	if err != nil {
		return nil, err
	}
	t, err := e.workflows.Resolve(ctx, p.Workflow, env)
	if err != nil {
		return nil, fmt.Errorf("resolving workflow %q: %w", p.Workflow, err)
	}
	c, err := e.defs.get(t.Definition)
	if err != nil {
		return nil, fmt.Errorf("workflow %q: %w", t.Name, err)
	}
	input, err := checkInput(c, p.Input)
	if err != nil {
		return nil, err
	}
	r := e.newRun(t, env, input)
	r.RerunOf, r.StartedBy = p.RerunOf, p.StartedBy
	return e.prepared(c, r)
}

// prepared lays out r's steps and start token.
func (e *Engine) prepared(c *compiled, r *Run) (*Admission, error) {
	initSteps(r, c.def)
	start, err := e.startHook(c, r)
	if err != nil {
		return nil, err
	}
	return &Admission{Run: r, c: c, start: start}, nil
}

// Commit writes a prepared run, with key when not nil, in one store write, and reports the
// key as Claim would (Claimed: the run was written). When a worker slot is free the same
// write leases the run to this engine and the run starts here at once; else it waits for
// a claim, here or on another process. A start token owned by another run is a
// *TokenConflictError and nothing is written.
func (e *Engine) Commit(ctx context.Context, a *Admission, key *idempotency.KeyWrite) (idempotency.ClaimResult, error) {
	r := a.Run
	p := CreateRunParams{Run: r, Start: a.start, Key: key}
	runCtx, local := e.reserve(r.ID)
	if local {
		p.Owner, p.LeaseUntil = e.cfg.Owner, e.now().Add(e.cfg.LeaseTTL)
	}
	res, err := e.store.CreateRun(ctx, p)
	if err != nil || res.Outcome != idempotency.Claimed {
		if local {
			e.unreserve(r.ID)
		}
		return res.ClaimResult, err
	}
	e.metrics.admitted(r)
	if !local {
		e.wake()
		return res.ClaimResult, nil
	}
	w := cloneRun(r)
	w.Claims = 1
	e.start(runCtx, Claimed{Run: w, Lease: res.Lease})
	return res.ClaimResult, nil
}

// cloneRun copies a run and its step records, so that a worker can go on changing its own
// copy while others read this one: the admission's caller (the run as admitted) and the
// followers a save hands its state to (broker.saved).
func cloneRun(r *Run) *Run {
	c := *r
	c.Steps = make([]*StepRecord, len(r.Steps))
	for i, s := range r.Steps {
		cs := *s
		c.Steps[i] = &cs
	}
	return &c
}
