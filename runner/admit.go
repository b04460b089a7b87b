package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/idempotency"
)

// CreateRunParams asks a Store to admit a run in one write (one transaction or script).
type CreateRunParams struct {
	// Run is the new run, due at Run.WakeAt; possibly already ended (see Store.CreateRun).
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
	// CatalogVersion, when not 0, is the catalog version the run's workflow was resolved
	// at (Target.CatalogVersion): the store writes the run only if the catalog still stands
	// there, checked in the same write (which saves the admission a read of the version
	// before it), else ErrStaleCatalog and nothing is written. Key is checked first: a live
	// key's or a full scope's outcome is answered instead, so that a retry replays its key
	// whatever the catalog did since.
	CatalogVersion int64
}

// ErrEndedRun is CreateRun's refusal of an ended run it cannot write as such: one without
// its FinishedAt, or one asked to be leased.
var ErrEndedRun = errors.New("a run admitted ended needs its finish time and no lease")

// Check refuses what no store writes: an ended run (terminal status) without FinishedAt
// or with an Owner. Stores call it before writing anything.
func (p CreateRunParams) Check() error {
	if p.Run.Status.Terminal() && (p.Run.FinishedAt == nil || p.Owner != "") {
		return fmt.Errorf("creating run %s (%s): %w", p.Run.ID, p.Run.Status, ErrEndedRun)
	}
	return nil
}

// CreateRunResult is what CreateRun did: the key's outcome as idempotency.Store.Claim
// reports it and, when the run was written with CreateRunParams.Owner set, its lease.
type CreateRunResult struct {
	idempotency.ClaimResult
	Lease Lease
	// Queued says a run with Run.Concurrency was written queued (see Store.QueuePlace).
	Queued bool
}

// Admission is a run built and checked in memory but not yet written (see Prepare), so
// that its answer can be made before the one write that commits both.
type Admission struct {
	// Run is the run the admission creates, as its answer shows it: pending, or queued
	// once Commit wrote it so (queue.go).
	Run *Run
	// Written is the run as Commit wrote it, once it has: Run, or further along when it
	// started at once (its first steps may have run, it may even have ended). It is shared
	// with the engine (an ended run is the one it keeps, see endedRuns): it must not be
	// modified.
	Written *Run
	c       *compiled
	start   *Hook
	// input is Run.Input decoded, when Prepare decoded it (nil: not yet).
	input any
	// asked is what Prepare resolved (nil for a child run, admitted unchecked), and
	// catalog the catalog version its target stands at (0: unchecked).
	asked   *SubmitParams
	catalog int64
	// parent is the run whose workflow step admits this one (nil: a run started from
	// outside). It is what sees the owner of a start token the child's policy reuses, so
	// the policy acts on that owner only as the parent may reach it (SPEC §6).
	parent *Run
}

// viewer is the run a's start-token policy acts for: its parent's workflow step, or the
// run itself.
func (a *Admission) viewer() *Run {
	if a.parent != nil {
		return a.parent
	}
	return a.Run
}

// Prepare resolves the workflow, validates the input and builds the new run with its
// step records and start token, writing nothing. An invalid input is an *InputError.
func (e *Engine) Prepare(ctx context.Context, p SubmitParams) (*Admission, error) {
	env, err := environment(p.Environment)
	if err != nil {
		return nil, err
	}
	t, ok := e.kept(p.Workflow, env)
	if !ok {
		if t, err = e.workflows.Resolve(ctx, p.Workflow, env); err != nil {
			return nil, fmt.Errorf("resolving workflow %q: %w", p.Workflow, err)
		}
	}
	c, err := e.defs.get(t.Definition)
	if err != nil {
		return nil, fmt.Errorf("workflow %q: %w", t.Name, err)
	}
	input, decoded, err := checkInput(c, p.Input)
	if err != nil {
		return nil, err
	}
	trigger, err := triggerOf(p)
	if err != nil {
		return nil, err
	}
	r := e.newRun(t, env, input)
	r.RerunOf, r.Task, r.ActsFor = p.RerunOf, p.Task, authorityOf(p.By, t.Publisher)
	r.Trigger, r.TraceParent = trigger, e.traceParent(ctx)
	if p.By != nil {
		r.StartedBy = p.By.ID
	}
	a, err := e.prepared(c, r)
	if err != nil {
		return nil, err
	}
	a.input = decoded
	p.Environment = env
	a.asked, a.catalog = &p, t.CatalogVersion
	return a, nil
}

// kept is the workflows' kept answer for idOrName in env, when they keep answers.
func (e *Engine) kept(idOrName, env string) (*Target, bool) {
	k, ok := e.workflows.(KeptWorkflows)
	if !ok {
		return nil, false
	}
	return k.Kept(idOrName, env)
}

// ErrTargetChanged is Commit's refusal of an admission whose workflow changed since
// Prepare resolved it (a new version published, the workflow unpublished or deleted):
// nothing was written; Prepare again. Admit does.
var ErrTargetChanged = errors.New("the workflow changed since the admission was prepared")

// recheck answers a refusal of a's write for a stale catalog version: it resolves a's
// workflow again, reading the catalog, and when the target is the one a was prepared
// from, clears a's version check, so that the next write is as a fresh resolution's
// (read just before it); else ErrTargetChanged (also for a workflow now gone or
// unpublished, which Prepare then reports).
func (e *Engine) recheck(ctx context.Context, a *Admission) error {
	t, err := e.workflows.Resolve(ctx, a.asked.Workflow, a.asked.Environment)
	if errors.Is(err, ErrWorkflowNotFound) || errors.Is(err, ErrNotPublished) {
		return fmt.Errorf("workflow %q: %w (%w)", a.asked.Workflow, ErrTargetChanged, err)
	}
	if err != nil {
		return fmt.Errorf("resolving workflow %q: %w", a.asked.Workflow, err)
	}
	r := a.Run
	if t.WorkflowID != r.WorkflowID || t.Name != r.Workflow || t.Version != r.Version || !bytes.Equal(t.Definition, r.Definition) {
		return fmt.Errorf("workflow %q: %w", a.asked.Workflow, ErrTargetChanged)
	}
	a.catalog = 0
	return nil
}

// prepared fixes r's concurrency key and lays out its steps and start token.
func (e *Engine) prepared(c *compiled, r *Run) (*Admission, error) {
	if err := e.queueOf(c, r); err != nil {
		return nil, err
	}
	initSteps(r, c.def)
	start, err := e.startHook(c, r)
	if err != nil {
		return nil, err
	}
	return &Admission{Run: r, c: c, start: start}, nil
}

// Commit writes a prepared run, with key when not nil, in one store write, and reports the
// key as Claim would (Claimed: the run was written, a.Written is set). A start token owned
// by another run is a *TokenConflictError and nothing is written.
//
// When a worker slot is free the run starts here, in its admission: the steps without
// effects at its head run first, in memory (see begin), and the one write admits the run
// as they left it: ended, or leased to this engine at its first step with effects, which a
// worker here then runs. A run of such steps alone costs that one write, and runs so even
// when no slot is free (commitOverflow). Else the run is written pending and waits for a
// claim, here or on another process.
//
// A run prepared from a kept target (KeptWorkflows) is written only while the catalog
// still stands where that target was current. When it moved, Commit resolves the workflow
// again and writes the run if its target is unchanged, else it writes nothing and answers
// ErrTargetChanged.
func (e *Engine) Commit(ctx context.Context, a *Admission, key *idempotency.KeyWrite) (idempotency.ClaimResult, error) {
	res, err := e.commit(ctx, a, key)
	if !errors.Is(err, ErrStaleCatalog) || a.catalog == 0 {
		return res, err
	}
	if err := e.recheck(ctx, a); err != nil {
		return idempotency.ClaimResult{}, err
	}
	return e.commit(ctx, a, key)
}

// commit is Commit's one write.
func (e *Engine) commit(ctx context.Context, a *Admission, key *idempotency.KeyWrite) (idempotency.ClaimResult, error) {
	r := a.Run
	if r.Concurrency != nil {
		return e.commitQueued(ctx, a, key)
	}
	runCtx, local := e.reserve(r.ID)
	if !local {
		if res, ended, err := e.commitOverflow(ctx, a, key); ended || err != nil {
			return res, err
		}
		res, err := e.store.CreateRun(ctx, CreateRunParams{Run: r, Start: a.start, Key: key, CatalogVersion: a.catalog})
		if err != nil || res.Outcome != idempotency.Claimed {
			return res.ClaimResult, err
		}
		a.Written = r
		e.metrics.admitted(r)
		e.wake()
		return res.ClaimResult, nil
	}
	x := e.newExecution(cloneRun(r), Lease{})
	ad := &admitting{start: a.start, key: key, catalog: a.catalog}
	x.admit = ad
	if err := x.load(a.c, a.input); err != nil {
		e.endPass(Lease{}, r.ID, true)
		return idempotency.ClaimResult{}, err
	}
	f, attempt := x.begin(runCtx)
	if x.admit != nil {
		e.endPass(Lease{}, r.ID, true)
		return ad.res, ad.err
	}
	if f != flowNext {
		a.Written = x.r // the pass is over: nothing changes x.r any more
		ad.unfollow()
		e.endPass(x.lease, r.ID, f == flowKeep)
		return ad.res, nil
	}
	a.Written = cloneRun(x.r) // the worker goes on with x.r
	// This process's waiters of the run start from the state written, read from no store;
	// the worker's saves hand them the next ones.
	ad.follow()
	e.start(runCtx, x.lease, func() bool {
		defer ad.leave()
		if attempt != nil {
			if f := x.attempt(runCtx, attempt); f != flowNext {
				return f == flowKeep
			}
		}
		return x.run(runCtx) == flowKeep
	})
	return ad.res, nil
}

// commitOverflow runs a, when no worker slot is free, in memory all the same if none of its
// steps has effects: such a run takes no slot's resources but the CPU of its admission,
// which Config.AdmissionWork bounds. An engine not started leaves its admissions pending.
// ended reports that the run ended there and its one write was made (or refused: res, err
// say); else nothing of the pass is kept (its steps are a function of the input) and the
// caller writes the run pending, as prepared, for a worker to run.
func (e *Engine) commitOverflow(ctx context.Context, a *Admission, key *idempotency.KeyWrite) (res idempotency.ClaimResult, ended bool, err error) {
	if !e.working() || !a.c.effectFree(e.kinds) {
		return res, false, nil
	}
	x := e.newExecution(cloneRun(a.Run), Lease{})
	ad := &admitting{start: a.start, key: key, catalog: a.catalog, endsOnly: true}
	x.admit = ad
	if err := x.load(a.c, a.input); err != nil {
		return res, false, err
	}
	x.begin(context.WithoutCancel(ctx))
	if x.admit != nil {
		return ad.res, ad.err != nil || ad.res.Outcome != 0, ad.err
	}
	a.Written = x.r // the pass is over: nothing changes x.r any more
	return ad.res, true, nil
}

// admitting is a new run's admission write, which its execution makes in place of its
// first save (admitWrite), and the write's outcome.
type admitting struct {
	start   *Hook
	key     *idempotency.KeyWrite
	catalog int64
	// endsOnly makes the write only of a run that ended (commitOverflow): any other save
	// writes nothing and ends the pass.
	endsOnly bool
	res      idempotency.ClaimResult
	err      error
	// follow starts the run's feed in this process once the run is written, leased here
	// (broker.expect); the worker calls leave when its pass ends.
	follow, leave func()
}

// unfollow leaves the run's feed when it was joined (admitWrite) and no worker here goes
// on with the run.
func (ad *admitting) unfollow() {
	if ad.leave != nil {
		ad.leave()
	}
}

// begin runs the head of a new run in memory, before anything of it is written: the steps
// without effects (set, fail; their records are a function of the input, see
// saveProgress), until the run ends, reaches a step with effects, holds
// MaxUncommittedSteps finished steps or has run for Config.AdmissionWork. The save that
// follows is the run's admission write: the end, the start of the attempt of a step whose
// kind saves it first (returned, for the worker to run), or a save of its own before any
// other step with effects.
func (x *execution) begin(ctx context.Context) (flow, *stepExec) {
	now := x.e.now()
	x.r.StartedAt = &now
	x.running()
	began := time.Now()
	for x.admit != nil {
		i := x.next()
		if i < 0 {
			return x.complete(ctx, SaveOptions{}), nil
		}
		if time.Since(began) >= x.e.cfg.AdmissionWork {
			return x.save(ctx, SaveOptions{}), nil
		}
		st := &x.c.def.Steps[i]
		k, _ := x.e.kinds.of(st)
		switch {
		case st.Compound() && x.e.kinds.effects(st):
			return x.save(ctx, SaveOptions{}), nil
		case k == nil || !k.Effects:
			if f := x.step(ctx, i); f != flowNext {
				return f, nil
			}
		case k.saveStart:
			if s, f := x.enter(ctx, i); s != nil || f != flowNext {
				return f, s
			}
		default:
			return x.save(ctx, SaveOptions{}), nil
		}
	}
	return flowNext, nil
}

// admitWrite is a new run's first save: it admits the run as the execution has it, with the
// admission's start token and key, leased to this engine unless the run already ended. When
// nothing was written (a live key, a full scope, a token conflict, an error) the pass ends
// with nothing to release, and Commit reports the outcome.
func (x *execution) admitWrite(ctx context.Context) flow {
	ad := x.admit
	if ad.endsOnly && !x.r.Status.Terminal() {
		return flowKeep
	}
	p := CreateRunParams{Run: x.r, Start: ad.start, Key: ad.key, CatalogVersion: ad.catalog}
	if !x.r.Status.Terminal() {
		p.Owner, p.LeaseUntil = x.e.cfg.Owner, x.e.now().Add(x.e.cfg.LeaseTTL)
		x.r.Claims = 1
		// The run goes on here: its feed listens before the run exists anywhere, so that
		// no other process's notice of it is missed.
		ad.follow, ad.leave = x.e.broker.expect(x.r.ID)
	}
	res, err := x.e.store.CreateRun(context.WithoutCancel(ctx), p)
	ad.res, ad.err = res.ClaimResult, err
	if err != nil || res.Outcome != idempotency.Claimed {
		ad.unfollow()
		return flowKeep
	}
	x.admit, x.lease = nil, res.Lease
	x.e.metrics.admitted(x.r)
	x.saved()
	return flowNext
}

// cloneRun copies a run and its step records, so that a worker can go on changing its own
// copy while others read this one: the admission's caller (the run as admitted) and the
// followers a save hands its state to (broker.saved).
func cloneRun(r *Run) *Run {
	c := *r
	c.Steps = make([]*StepRecord, len(r.Steps))
	recs := make([]StepRecord, len(r.Steps)) // one allocation for all
	for i, s := range r.Steps {
		recs[i] = *s
		c.Steps[i] = &recs[i]
	}
	return &c
}
