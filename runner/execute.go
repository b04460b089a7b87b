package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/schemas"
)

// flow says what a worker does after a piece of a run.
type flow int

const (
	flowNext    flow = iota // go on with the run
	flowRelease             // stop and release the lease: the run waits, or was interrupted
	flowKeep                // stop, leave the lease: the run ended, or the lease is lost
)

// maxPasses bounds how often a waiting step is re-checked right after its wait was saved
// (which closes the race with a payload or an end that came in meanwhile).
const maxPasses = 3

// internalRetry is how long a run waits after an internal error (the store failing, say)
// interrupted one of its steps; the step is then tried again, not counted as failed.
const internalRetry = time.Second

// MaxVanishedWorkers is how many workers in a row may vanish (crash, be killed, hang or
// lose the lease) while holding a run, without the run making progress, before the next
// claim fails the run with RUN_ABANDONED instead of trying its step again: one input that
// kills every process that runs it must not go round all of them forever.
const MaxVanishedWorkers = 3

// MaxUncommittedSteps bounds how many finished steps a worker holds before committing them.
// Steps without effects (set, fail, skipped steps) are not committed on their own but with
// the next durable point: the first commit of a step with effects, a wait, the run's end.
// A long chain of them is committed every MaxUncommittedSteps steps, so a crash throws away
// at most that much (recomputable) work and a worker's unsaved state stays bounded.
const MaxUncommittedSteps = 100

// execution is one worker's pass over a claimed run.
type execution struct {
	e     *Engine
	r     *Run
	lease Lease
	c     *compiled
	// scope is what the run's expressions see: its input, run, finished steps' outputs,
	// built at load and updated as steps finish.
	scope *expression.Scope
	// changed holds the indexes of the step records changed since the last save.
	changed []int
	// marked[i] says whether i is in changed.
	marked []bool
	// finished counts the steps finished since the last save: their records wait for the
	// next commit (see saveProgress).
	finished int
	// admit, while the run is not written yet, is its admission: the first save writes the
	// run with it instead (see Engine.Commit).
	admit *admitting
	// t indexes the run's nested records, for a definition with control flow (nil: the
	// straight line; see flow.go).
	t *tree
	// mu is held by the goroutine executing the run while lists of it run concurrently
	// (branches > 0, see concurrently); a sequential pass never takes it.
	mu       sync.Mutex
	branches int
	// soonest is the earliest time a list running concurrently asked the run to be due
	// again at (a retry's backoff, the http bounds), when one stopped for that; waits are
	// the waits lists running concurrently stopped at (see joined).
	soonest time.Time
	waits   []*suspension
	// ending, once a step in a list running concurrently completed the whole run (a hook
	// conflict under reject, adopt or forward), is the options of the run's end.
	ending *SaveOptions
	// group commits the saves of lists running concurrently (see together).
	group together
}

// work executes claimed run cl.Run under cl.Lease until it ends, waits or is interrupted,
// and reports whether its lease must be kept as is (not released).
func (e *Engine) work(ctx context.Context, cl Claimed) bool {
	x := e.newExecution(cl.Run, cl.Lease)
	if len(cl.Run.Definition) == 0 {
		return x.orphaned(ctx) == flowKeep
	}
	c, err := e.defs.get(cl.Run.Definition)
	if err == nil {
		err = x.load(c, nil)
	}
	if err != nil {
		return x.definitionFailed(ctx, -1, err) == flowKeep
	}
	if cl.Run.Claims > MaxVanishedWorkers {
		return x.abandoned(ctx) == flowKeep
	}
	return x.run(ctx) == flowKeep
}

// newExecution is a pass over run r, saved under lease.
func (e *Engine) newExecution(r *Run, lease Lease) *execution {
	return &execution{e: e, r: r, lease: lease}
}

// load makes c, the run's compiled definition, and the run's input and finished steps what
// the execution's expressions see. input is the run's input decoded, when the caller has it
// (nil: it is decoded here).
func (x *execution) load(c *compiled, input any) error {
	n := len(c.def.Steps)
	if len(x.r.Steps) < n || (len(x.r.Steps) > n && c.flowIndex() == nil) {
		return fmt.Errorf("run has %d step records for %d steps", len(x.r.Steps), n)
	}
	if input == nil {
		var err error
		if input, err = decodeJSON(x.r.Input); err != nil {
			return err
		}
	}
	x.c, x.scope = c, expression.NewScope(input, runEnv(x.r))
	for i, rec := range x.r.Steps[:n] {
		if settled(rec) {
			x.remember(i, rec, nil, false)
		}
	}
	if c.flowIndex() != nil {
		x.t = newTree(x.r.Steps, n)
	}
	return nil
}

// abandoned fails a run that the workers before this one claimed and lost without making
// progress, MaxVanishedWorkers times in a row, without running its step again.
func (x *execution) abandoned(ctx context.Context) flow {
	i := x.next()
	at := "before its first step"
	if i >= 0 {
		rec := x.r.Steps[i]
		at = fmt.Sprintf("during step %q (attempt %d)", rec.ID, max(rec.Attempts, 1))
	}
	return x.finishFailed(ctx, i, permanent(CodeAbandoned,
		"run abandoned: %d workers in a row stopped (crashed, were killed or hung) %s without saving any progress; it is not tried again",
		x.r.Claims-1, at))
}

// orphaned ends a run whose definition the store no longer has (its version's record was
// deleted, or evicted by Redis): cancelled when that was asked, which needs no definition,
// else failed at the step it stands at, saying why, instead of coming back due at every
// lease's end with its tokens held. A rerun runs the workflow's current version.
func (x *execution) orphaned(ctx context.Context) flow {
	if x.r.CancelRequested {
		return x.finishCancelled(ctx)
	}
	return x.definitionFailed(ctx, x.next(), fmt.Errorf(
		"the run cannot go on: its definition (version %d of workflow %q) is no longer in the store, whose record of that version was deleted or evicted; a rerun runs the workflow's current version",
		x.r.Version, x.r.Workflow))
}

// definitionFailed fails a run that cannot be worked for want of a usable definition with
// DEFINITION_ERROR saying why (err), at step i (-1: at no step). Both such runs end here:
// one whose definition the store no longer has (orphaned: at the step it stands at, unless
// its cancel was asked) and one whose stored definition does not decode or does not fit
// its step records (at no step, whether or not a cancel was asked).
func (x *execution) definitionFailed(ctx context.Context, i int, err error) flow {
	return x.finishFailed(ctx, i, permanent(CodeDefinition, "%v", err))
}

// touch records that step record i changed, so the next save writes it.
func (x *execution) touch(i int) {
	if len(x.marked) <= i {
		x.marked = append(x.marked, make([]bool, len(x.r.Steps)-len(x.marked))...)
	}
	if !x.marked[i] {
		x.marked[i] = true
		x.changed = append(x.changed, i)
	}
}

func (x *execution) run(ctx context.Context) flow {
	now := x.e.now()
	if x.r.StartedAt == nil {
		x.r.StartedAt = &now
	}
	x.running()
	if x.compensating() {
		return x.compensate(ctx)
	}
	for {
		if x.r.CancelRequested || context.Cause(ctx) == errCancelRequested {
			return x.finishCancelled(ctx)
		}
		if ctx.Err() != nil {
			return x.handBack(ctx)
		}
		i := x.next()
		if i < 0 {
			return x.complete(ctx, SaveOptions{})
		}
		if f := x.step(ctx, i); f != flowNext {
			return f
		}
	}
}

// handBack ends a pass interrupted between steps (the engine stops, the lease is lost). The
// steps finished since the last commit are committed first, when the lease is still held,
// so that a clean stop loses no finished step.
func (x *execution) handBack(ctx context.Context) flow {
	if context.Cause(ctx) == errLeaseLost {
		return flowKeep
	}
	if x.finished > 0 {
		if f := x.save(ctx, SaveOptions{}); f != flowNext {
			return f
		}
	}
	return flowRelease
}

// running marks the run as being worked: due now, so that if this worker dies another takes
// it over once the lease expires.
func (x *execution) running() {
	x.r.Status = StatusRunning
	x.r.WaitingOn = nil
	x.r.WakeAt = x.e.now()
}

// next is the index of the first top-level step not yet finished, or -1. (A failed step
// the run goes on after has its onError: continue.)
func (x *execution) next() int {
	for i, rec := range x.r.Steps {
		if rec.Path == "" && !settled(rec) {
			return i
		}
	}
	return -1
}

// settled reports whether a step record is finished: completed, skipped or failed.
func settled(rec *StepRecord) bool {
	return rec.Status == StepCompleted || rec.Status == StepSkipped || rec.Status == StepFailed
}

// remember makes step record rec's output and conflict what later expressions see, as
// decoded from the record. When known is set, output is the value the record's Output was
// just encoded from, built for this step alone (an evaluation's result; a handler's value
// could be changed by the handler afterwards): taken as it decodes (expression.AsDecoded),
// parts of it shared, rather than decoded again.
func (x *execution) remember(i int, rec *StepRecord, output any, known bool) {
	out, ok := any(nil), false
	if known {
		out, ok = expression.AsDecoded(output)
	}
	if !ok {
		out, _ = decodeJSON(rec.Output)
	}
	if rec.Status == StepFailed && rec.Error != nil {
		x.scopeAt(i).SetError(rec.ID, out, map[string]any{"code": rec.Error.Code, "message": rec.Error.Message})
		return
	}
	conflict, _ := decodeJSON(rec.Conflict)
	x.scopeAt(i).SetOutput(rec.ID, out, conflict)
}

// env is the scope as step i's attempt sees it.
func (x *execution) env(i, attempt int) *expression.Scope {
	rec, sc := x.r.Steps[i], x.scopeAt(i)
	sc.SetStep(rec.ID, rec.StepID, attempt)
	return sc
}

// step runs step i: its if, then attempts of its kind until it completes, fails, or waits.
func (x *execution) step(ctx context.Context, i int) flow {
	if x.t != nil && x.stepAt(i).Compound() {
		return x.compound(ctx, i)
	}
	s, f := x.enter(ctx, i)
	if s == nil {
		return f
	}
	return x.attempt(ctx, s)
}

// enter begins step i: its if (a skipped step is done with), then a new attempt, saved
// first when its kind acts outside the run. It returns the attempt to run, or nil and how
// the pass goes on when there is none (the step was skipped or failed, or the save ended
// the pass).
func (x *execution) enter(ctx context.Context, i int) (*stepExec, flow) {
	rec, st := x.r.Steps[i], x.stepAt(i)
	k, err := x.e.kinds.of(st)
	if err != nil {
		return nil, x.gaveUp(ctx, i, err)
	}
	s := &stepExec{x: x, i: i, rec: rec, st: st, kind: k}
	x.touch(i)
	if rec.Status == StepPending {
		now := x.e.now()
		rec.StartedAt = &now
		if skip, err := s.skip(); err != nil || skip {
			return nil, x.skipped(ctx, i, err)
		}
	}
	if rec.Status != StepWaiting {
		if k.outbound {
			if s.inFlight = x.e.httpBound.take(x.r.WorkflowID); !s.inFlight {
				return nil, x.outboundBusy(ctx, i)
			}
		}
		rec.Attempts++
		rec.Status = StepRunning
		s.started = x.e.now()
		if k.saveStart {
			if f := x.save(ctx, SaveOptions{AttemptStart: true}); f != flowNext {
				s.leave()
				return nil, f
			}
		}
	}
	return s, flowNext
}

// outboundBusy hands the run back, due again after HTTPBusyDelay or later (backOff), when
// the attempt of its step i would go over Config.HTTPConcurrency or Config.HTTPPerWorkflow:
// the attempt is neither made nor counted, and the runs already due are claimed first.
func (x *execution) outboundBusy(ctx context.Context, i int) flow {
	now := x.e.now()
	x.dueAt(x.e.httpBound.backOff(x.r.WorkflowID, now))
	x.e.log.Debug("http attempts in flight at their bound; run handed back",
		"run", x.r.ID, "workflow", x.r.Workflow, "step", x.r.Steps[i].ID, "delay", x.r.WakeAt.Sub(now))
	if f := x.saveAndRelease(ctx); f != flowRelease {
		return f
	}
	x.e.wakeAt(x.r.WakeAt)
	return flowRelease
}

func (x *execution) skipped(ctx context.Context, i int, err error) flow {
	if err != nil {
		return x.gaveUp(ctx, i, err)
	}
	rec := x.r.Steps[i]
	x.touch(i)
	rec.Status, rec.FinishedAt = StepSkipped, rec.StartedAt
	x.remember(i, rec, nil, false)
	return x.saveProgress(ctx, SaveOptions{}, false)
}

// runAttempt runs the step's kind; a wait is saved and re-checked once before the lease goes.
func (x *execution) runAttempt(ctx context.Context, s *stepExec) flow {
	var saved []byte
	for pass := 0; pass < maxPasses; pass++ {
		out, err := s.kind.run(ctx, s)
		s.leave()
		// An attempt that ended because another list failed (failFast) stands if it had
		// its result: what it did outside is then compensated like any completed step.
		if ctx.Err() != nil && s.kind.Effects && (err != nil || context.Cause(ctx) != errFailFast) {
			return x.interrupted(ctx)
		}
		if err != nil {
			return x.stepFailed(ctx, s, err)
		}
		if out.wait == nil {
			return x.stepDone(ctx, s, out)
		}
		key, err := x.suspend(s, out.wait)
		if err != nil {
			return x.stepFailed(ctx, s, err)
		}
		if key == string(saved) {
			break
		}
		if f := x.save(ctx, SaveOptions{}); f != flowNext {
			return f
		}
		x.e.wakeAt(x.r.WakeAt)
		saved = []byte(key)
	}
	return flowRelease
}

// suspend records a wait on the run and returns what identifies it (the state and what the
// run waits on), so an unchanged wait found by a re-check is not saved again.
func (x *execution) suspend(s *stepExec, w *suspension) (string, error) {
	state, err := json.Marshal(w.state)
	if err != nil {
		return "", fmt.Errorf("encoding step state: %w", err)
	}
	x.touch(s.i)
	s.rec.State, s.rec.Status, w.at = state, StepWaiting, s.i
	if x.branches > 0 {
		x.waits = append(x.waits, w) // the run waits once no list can go on (joined)
	} else {
		x.r.Status, x.r.WaitingOn, x.r.WakeAt = w.runStatus, w.waitingOn, w.until
	}
	on, _ := json.Marshal(w.waitingOn)
	return string(state) + string(on), nil
}

// interrupted ends a worker's pass whose context was cancelled mid-step; the attempt is not
// recorded, except that a requested cancel ends the run. (A step without effects does not
// look at the context: its result stands, and the run loop stops after it.)
func (x *execution) interrupted(ctx context.Context) flow {
	if x.branches > 0 {
		return flowRelease // the list stops; concurrently decides for the run
	}
	switch context.Cause(ctx) {
	case errCancelRequested:
		return x.finishCancelled(ctx)
	case errLeaseLost:
		return flowKeep
	}
	return flowRelease
}

func (x *execution) stepDone(ctx context.Context, s *stepExec, out outcome) flow {
	i, rec := s.i, s.rec
	raw, err := encodeOutput(out.output)
	if err != nil {
		return x.gaveUp(ctx, i, permanent(CodeStep, "encoding output: %v", err))
	}
	s.recordAttempt(nil)
	now := x.e.now()
	x.touch(i)
	rec.Status, rec.Output, rec.Error, rec.State, rec.FinishedAt = StepCompleted, raw, nil, nil, &now
	rec.Conflict = nil
	if out.conflict != nil {
		rec.Conflict, _ = json.Marshal(out.conflict)
	}
	x.remember(i, rec, out.output, out.evaluated)
	x.running()
	opts := SaveOptions{ConsumePayload: out.consume}
	if out.endRun {
		x.r.Output = raw
		if x.branches > 0 { // the run ends once the other lists have stopped (joined)
			x.ending = &opts
			return flowRelease
		}
		return x.finish(ctx, StatusCompleted, opts)
	}
	if s.kind.Effects && x.deferred(i, opts) {
		return flowNext
	}
	return x.saveProgress(ctx, opts, s.kind.Effects)
}

// encodeOutput is json.Marshal(v), without reflection for the plain values expressions give.
func encodeOutput(v any) (json.RawMessage, error) {
	if raw, ok := expression.AppendJSON(nil, v); ok {
		return raw, nil
	}
	return json.Marshal(v)
}

// saveProgress commits a finished step; after the last one, the run's completion is saved
// in the same write. A step without effects is not committed on its own: its record rides
// along with the next commit — the first save of a step with effects (its attempt start, a
// checkpoint, its wait, its result), a retry, the run's end, or the MaxUncommittedSteps-th
// step.
//
// Such a step's output is a function of what is already durable: the run's input, the
// committed outputs and its stepId, fixed at admission; expressions cannot read the clock
// or anything else outside the run. A worker that dies before the commit leaves the run at
// its last committed step and the next worker computes the same records again. So the
// batch need not be durable before a step with effects runs: what that step's durability
// needs is inputs (its evaluated body, stepId, attempt) that a restart reproduces, and they
// are. Most such steps commit before they act anyway (http, run and custom kinds their
// attempt's start, workflow its child's ID), which carries the batch; a hook claims its
// token first, which a restart with the same token finds already its own. The one thing
// not a function of the record is the expression time budget (expression.MaxEvalTime): it
// can turn a value into a step failure on the second computation, never into another value.
func (x *execution) saveProgress(ctx context.Context, opts SaveOptions, effects bool) flow {
	if x.next() < 0 && !x.compensating() {
		return x.complete(ctx, opts)
	}
	x.finished++
	if !effects && x.finished < MaxUncommittedSteps {
		return flowNext
	}
	return x.save(ctx, opts)
}

func (x *execution) stepFailed(ctx context.Context, s *stepExec, err error) flow {
	if errors.Is(err, errStateLeaseLost) {
		return flowKeep // nothing to save or release: the run is another worker's now
	}
	var se *stepError
	if !errors.As(err, &se) {
		x.e.log.Error("step interrupted by an internal error; trying again later", "run", x.r.ID, "step", s.st.ID, "err", err)
		x.dueAt(x.e.now().Add(internalRetry))
		return x.saveAndRelease(ctx)
	}
	x.touch(s.i)
	s.rec.Error = &Error{Code: se.code, Message: se.msg, Step: PathOf(s.rec)}
	s.recordAttempt(s.rec.Error)
	policy := retryPolicy(s.st, s.kind)
	if !se.retryable || s.rec.Attempts >= policy.MaxAttempts {
		return x.gaveUp(ctx, s.i, se)
	}
	x.running()
	x.dueAt(x.e.now().Add(backoff(policy, s.rec.Attempts, se.retryAfter)))
	if f := x.save(ctx, SaveOptions{}); f != flowNext {
		return f
	}
	x.e.wakeAt(x.r.WakeAt)
	return flowRelease
}

// complete ends the run with its result.
func (x *execution) complete(ctx context.Context, opts SaveOptions) flow {
	out, err := x.result()
	if err != nil {
		return x.finishFailed(ctx, -1, err)
	}
	if err := x.checkOutput(out); err != nil {
		return x.finishFailed(ctx, -1, err)
	}
	x.r.Output = out
	return x.finish(ctx, StatusCompleted, opts)
}

// checkOutput holds the output to the definition's output schema, so that what a tool's
// outputSchema promises is what a completed run returns.
func (x *execution) checkOutput(out json.RawMessage) error {
	if x.c.output == nil {
		return nil
	}
	v, err := decodeJSON(out)
	if err != nil {
		return permanent(CodeOutputInvalid, "decoding the output: %v", err)
	}
	problems := x.c.output.Validate(v)
	if len(problems) == 0 {
		return nil
	}
	return permanent(CodeOutputInvalid, "the output does not match the definition's output schema: %v", (&InputError{Problems: problems}).list())
}

func (x *execution) result() (json.RawMessage, error) {
	if x.c.def.Result == nil {
		if n := len(x.c.def.Steps); n > 0 && x.r.Steps[n-1].Output != nil {
			return x.r.Steps[n-1].Output, nil
		}
		return json.RawMessage("null"), nil
	}
	t, err := x.c.template(templateKey{-1, "result"}, func() (any, error) { return toJSONValue(x.c.def.Result) })
	if err != nil {
		return nil, permanent(CodeExpression, "result: %v", err)
	}
	x.scope.ClearStep()
	v, err := t.EvalIn(x.scope)
	if err != nil {
		return nil, evalFailed(err, "result: %v", err)
	}
	return json.Marshal(v)
}

// finishFailed fails the run with err at step i (-1: not at a step).
func (x *execution) finishFailed(ctx context.Context, i int, err error) flow {
	var se *stepError
	if !errors.As(err, &se) {
		se = permanent(CodeStep, "%v", err)
	}
	compensate := x.compensates()
	x.r.Error = &Error{Code: se.code, Message: se.msg}
	if i >= 0 {
		rec := x.r.Steps[i]
		now := x.e.now()
		x.r.Error.Step = PathOf(rec)
		if se.at != "" {
			x.r.Error.Step = se.at
		}
		x.touch(i)
		rec.Status, rec.Error, rec.FinishedAt = StepFailed, x.r.Error, &now
	}
	if compensate {
		return x.compensate(ctx)
	}
	return x.finish(ctx, StatusFailed, SaveOptions{})
}

// finishCancelled ends a run whose cancel was requested. The child runs its steps wait for
// are asked to cancel first; if that cannot be recorded the run stays as it is (its cancel
// still requested) and is tried again, so that no child outlives a cancelled parent.
func (x *execution) finishCancelled(ctx context.Context) flow {
	if x.compensating() {
		return x.compensate(ctx)
	}
	for _, rec := range x.r.Steps {
		if rec.Status != StepRunning && rec.Status != StepWaiting {
			continue
		}
		if err := x.e.cancelChild(ctx, rec); err != nil {
			x.e.log.Error("cancelling a child run; trying again later", "run", x.r.ID, "step", rec.ID, "err", err)
			x.r.WakeAt = x.e.now().Add(internalRetry)
			return x.saveAndRelease(ctx)
		}
	}
	now := x.e.now()
	for i, rec := range x.r.Steps {
		if rec.Status == StepRunning || rec.Status == StepWaiting {
			x.touch(i)
			rec.Status, rec.FinishedAt = StepCancelled, &now
		}
	}
	if x.compensates() {
		x.r.Error = &Error{Code: CodeCancelled, Message: "the run was cancelled"}
		return x.compensate(ctx)
	}
	return x.finish(ctx, StatusCancelled, SaveOptions{})
}

// finish saves the run's end: steps that never ran are skipped (cancelled when the run is);
// the store releases the run's tokens and wakes its parent.
func (x *execution) finish(ctx context.Context, status Status, opts SaveOptions) flow {
	left := StepSkipped
	if status == StatusCancelled {
		left = StepCancelled
	}
	for i, rec := range x.r.Steps {
		if rec.Status == StepPending {
			x.touch(i)
			rec.Status = left
		}
	}
	now := x.e.now()
	x.r.Status, x.r.FinishedAt, x.r.WaitingOn, x.r.WakeAt = status, &now, nil, time.Time{}
	if f := x.save(ctx, opts); f != flowNext {
		return f
	}
	x.e.finished.keep(x.r) // the pass is over: nothing changes x.r any more
	x.e.ended(context.WithoutCancel(ctx), x.r, x.kindName)
	return flowKeep
}

// kindName is the kind of step i for metrics: its builtin or custom kind's name.
func (x *execution) kindName(i int) string {
	if x.c == nil || (i >= len(x.c.def.Steps) && (x.t == nil || x.t.step[i] == nil)) {
		return "unknown"
	}
	st := x.stepAt(i)
	if st.Compound() {
		return schemas.KindOf(st).Name
	}
	k, err := x.e.kinds.of(st)
	if err != nil {
		return "unknown"
	}
	return k.Name
}

// save writes the run with the step records changed since the last save; it is never cut
// short by the worker's own interruption. A save that carries finished steps is progress,
// even when it also records an attempt's start.
func (x *execution) save(ctx context.Context, opts SaveOptions) flow {
	if x.admit != nil {
		return x.admitWrite(ctx)
	}
	if x.group.on {
		return x.saveTogether(ctx, opts)
	}
	if x.finished > 0 {
		opts.AttemptStart = false
	}
	slices.Sort(x.changed)
	opts.Steps = append([]int{}, x.changed...) // not nil: nil writes every record
	err := x.e.store.SaveRun(context.WithoutCancel(ctx), x.lease, x.r, opts)
	if err == nil {
		x.saved()
		return flowNext
	}
	if errors.Is(err, ErrLeaseLost) {
		return flowKeep
	}
	x.e.log.Error("saving run", "run", x.r.ID, "err", err)
	return flowRelease
}

// saved records that the run's state is committed: nothing is left to write, and the
// run's followers get the state.
func (x *execution) saved() {
	for _, i := range x.changed {
		x.marked[i] = false
	}
	x.changed = x.changed[:0]
	x.finished = 0
	x.e.broker.saved(x.r)
}

// saveAndRelease saves the run and ends the pass, releasing the lease unless the save found
// it lost (then there is nothing left to release).
func (x *execution) saveAndRelease(ctx context.Context) flow {
	if f := x.save(ctx, SaveOptions{}); f == flowKeep {
		return flowKeep
	}
	return flowRelease
}

// wakeAt pokes the local claim loop when t comes, if it is soon; later wake-ups are found
// by polling, so a long sleep costs no timer.
func (e *Engine) wakeAt(t time.Time) {
	if t.IsZero() {
		return
	}
	d := t.Sub(e.now())
	if d > time.Minute {
		return
	}
	time.AfterFunc(max(d, 0), e.wake)
}
