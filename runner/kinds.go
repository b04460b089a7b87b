package runner

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/schemas"
)

// StepHandler runs a step kind an embedder adds (Config.Kinds).
type StepHandler interface {
	// Run performs one attempt and returns the step's output (any JSON-encodable value).
	// An error is retried under the step's retry policy unless wrapped with Permanent. ctx
	// ends at the step's timeout, or when the run is cancelled or the engine stops.
	Run(ctx context.Context, sc *StepContext) (any, error)
}

// StepHandlerFunc adapts a function to StepHandler.
type StepHandlerFunc func(ctx context.Context, sc *StepContext) (any, error)

// Run calls f.
func (f StepHandlerFunc) Run(ctx context.Context, sc *StepContext) (any, error) { return f(ctx, sc) }

// StepContext is what a custom step handler knows about its invocation.
type StepContext struct {
	RunID string
	// StepID is the invocation's stepId: the same on every attempt, a good idempotency key.
	StepID string
	// StepName is the step's id in the definition.
	StepName string
	// Attempt counts from 1.
	Attempt int
	// Params is the step's body with its expressions evaluated.
	Params any
}

// runFunc runs one attempt of a step.
type runFunc func(ctx context.Context, s *stepExec) (outcome, error)

// stepKind is one row of the engine's step-kind table: the definition format's row
// (schemas.StepKind: the name, whether the kind has effects or reaches out) and how the
// engine runs the kind.
type stepKind struct {
	schemas.StepKind
	run runFunc
	// saveStart records the attempt before running it: the kind acts outside the run, so an
	// attempt a crash interrupts still counts against its retries.
	saveStart bool
	// attempts is the default retry.maxAttempts.
	attempts int
	// outbound says an attempt waits on the network: Config.HTTPConcurrency and
	// Config.HTTPPerWorkflow bound how many are in flight.
	outbound bool
	// handler runs a custom kind.
	handler StepHandler
}

// kindTable is an engine's step-kind table, keyed by the step's kind: the built-in kinds of
// schemas.BuiltinKinds and the custom kinds of Config.Kinds, registered alike.
type kindTable map[string]*stepKind

// builtinRuns is how the engine runs each built-in kind; the rest of each row comes from
// schemas.BuiltinKinds, the one list of built-in kinds.
var builtinRuns = map[string]stepKind{
	schemas.KindSet:      {run: runSet, attempts: 1},
	schemas.KindHTTP:     {run: runHTTP, saveStart: true, attempts: 3, outbound: true},
	schemas.KindHook:     {run: runHook, attempts: 1},
	schemas.KindSleep:    {run: runSleep, attempts: 1},
	schemas.KindRun:      {run: runRun, saveStart: true, attempts: 1},
	schemas.KindWorkflow: {run: runWorkflow, attempts: 1},
	schemas.KindFail:     {run: runFail, attempts: 1},
	schemas.KindMCP:      {run: runMCP, saveStart: true, attempts: 3, outbound: true},
}

// newKindTable builds the table of an engine with the custom kinds custom (which
// Config.validate keeps clear of the built-in names).
func newKindTable(custom map[string]StepHandler) kindTable {
	t := make(kindTable, len(builtinRuns)+len(custom))
	for _, k := range schemas.BuiltinKinds() {
		row, ok := builtinRuns[k.Name]
		if !ok {
			continue // a compound kind: the execution runs the steps it holds itself
		}
		row.StepKind = k
		t[k.Name] = &row
	}
	for name, h := range custom {
		t[name] = &stepKind{StepKind: schemas.CustomKind(name), run: runCustom, saveStart: true, attempts: 1, handler: h}
	}
	return t
}

// of returns the row of step st's kind; a kind this engine does not know fails the step.
func (t kindTable) of(st *schemas.Step) (*stepKind, error) {
	if k, ok := t[schemas.KindOf(st).Name]; ok {
		return k, nil
	}
	return nil, permanent(CodeInvalidStep, "step %q has no known kind", st.ID)
}

func runSet(_ context.Context, s *stepExec) (outcome, error) {
	v, err := s.evalKey(schemas.KindSet, func() (any, error) { return toJSONValue(s.st.Set.Value) }, s.rec.Attempts)
	return outcome{output: v, evaluated: true}, err
}

func runFail(_ context.Context, s *stepExec) (outcome, error) {
	var f schemas.FailStep
	if err := s.eval(s.st.Fail, &f); err != nil {
		return outcome{}, err
	}
	if f.Code == "" {
		f.Code = CodeFailed
	}
	return outcome{}, permanent(f.Code, "%s", f.Message)
}

type sleepState struct {
	Until time.Time `json:"until"`
}

// runSleep waits until a deadline computed once and kept in the step's state, so a restart
// does not start the sleep over.
func runSleep(_ context.Context, s *stepExec) (outcome, error) {
	var st sleepState
	if err := s.state(&st); err != nil {
		return outcome{}, err
	}
	if st.Until.IsZero() {
		var sl schemas.SleepStep
		if err := s.eval(s.st.Sleep, &sl); err != nil {
			return outcome{}, err
		}
		st.Until = s.engine().now().Add(sl.Duration.Std())
		if sl.Until != "" {
			t, err := time.Parse(time.RFC3339, sl.Until)
			if err != nil {
				return outcome{}, permanent(CodeInvalidStep, "step %q: until %q is not an RFC 3339 time", s.st.ID, sl.Until)
			}
			if err := schemas.CheckUntil(t, s.engine().now()); err != nil {
				return outcome{}, evalFailed(err, "step %q: %v", s.st.ID, err)
			}
			st.Until = t.UTC()
		}
	}
	if !s.engine().now().Before(st.Until) {
		return outcome{}, nil
	}
	until := st.Until
	return outcome{wait: &suspension{until: until, runStatus: StatusWaiting, waitingOn: &WaitingOn{SleepUntil: &until}, state: st}}, nil
}

func runCustom(ctx context.Context, s *stepExec) (outcome, error) {
	var params any
	if err := s.eval(s.st.Custom[s.kind.Name], &params); err != nil {
		return outcome{}, err
	}
	if d := s.st.Timeout.Std(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	sc := &StepContext{RunID: s.run().ID, StepID: s.rec.StepID, StepName: s.st.ID, Attempt: s.rec.Attempts, Params: params}
	out, err := s.kind.handler.Run(ctx, sc)
	if err == nil {
		return outcome{output: out}, nil
	}
	var p *permanentError
	switch {
	case ctx.Err() != nil && context.Cause(ctx) == context.DeadlineExceeded:
		return outcome{}, retryable(CodeTimeout, "step %q timed out after %s", s.st.ID, s.st.Timeout.Std())
	case errors.As(err, &p):
		return outcome{}, permanent(CodeStep, "%v", p.err)
	}
	return outcome{}, retryable(CodeStep, "%v", err)
}

// runRun acts on another run, as the run may reach it (SPEC §6): one it may not is not
// found, exactly as one that does not exist.
func runRun(ctx context.Context, s *stepExec) (outcome, error) {
	var rs schemas.RunStep
	if err := s.eval(s.st.Run, &rs); err != nil {
		return outcome{}, err
	}
	e := s.engine()
	switch rs.Action {
	case schemas.RunActionStatus:
		r, err := e.reachRun(ctx, s.run(), auth.RunsRead, rs.RunID)
		if err != nil {
			return outcome{}, runNotFound(err, rs.RunID)
		}
		return outcome{output: r.Status}, nil
	case schemas.RunActionResult:
		return s.awaitResult(ctx, rs.RunID, rs)
	case schemas.RunActionCancel:
		if _, err := e.reachRun(ctx, s.run(), auth.RunsWrite, rs.RunID); err != nil {
			return outcome{}, runNotFound(err, rs.RunID)
		}
		if err := e.requestCancel(ctx, rs.RunID); err != nil && !errors.Is(err, ErrFinished) {
			return outcome{}, runNotFound(err, rs.RunID)
		}
		return outcome{}, nil
	case schemas.RunActionResume:
		return s.resumeOther(ctx, rs)
	}
	return outcome{}, permanent(CodeInvalidStep, "step %q: unknown run action %q", s.st.ID, rs.Action)
}

// resumeOther queues rs.Payload for the hook on rs.Token in the run's environment, when the
// run may reach the hook's run with runs:write; a hook it may not reach is not found, as
// one not registered (yet). A payload that does not fit the ask of the hook step waiting
// on the token fails the step (VALIDATION_ERROR), as REST refuses it, and is not queued.
func (s *stepExec) resumeOther(ctx context.Context, rs schemas.RunStep) (outcome, error) {
	payload, err := json.Marshal(rs.Payload)
	if err != nil {
		return outcome{}, permanent(CodeInvalidStep, "step %q: payload: %v", s.st.ID, err)
	}
	e := s.engine()
	h, err := e.Hook(ctx, s.run().Environment, rs.Token)
	var owner *Run
	if err == nil {
		owner, err = e.reachRun(ctx, s.run(), auth.RunsWrite, h.RunID)
	}
	if err == nil {
		if err = checkAsked(owner, rs.Token, payload); err != nil {
			return outcome{}, permanent(CodeValidation, "step %q: the payload does not fit the question of the hook on token %q: %v", s.st.ID, rs.Token, err)
		}
		_, err = e.Resume(ctx, s.run().Environment, rs.Token, payload)
	}
	if errors.Is(err, ErrNotFound) {
		return outcome{}, retryable(CodeNotFound, "no active hook on token %q", rs.Token)
	}
	return outcome{}, err
}

// awaitResult waits (durably) for run id to end and outputs its output.
func (s *stepExec) awaitResult(ctx context.Context, id string, state any) (outcome, error) {
	r, wait, err := s.awaitRun(ctx, id, auth.RunsRead, state)
	if err != nil || wait != nil {
		return outcome{wait: wait}, err
	}
	if r.Status != StatusCompleted {
		return outcome{}, permanent(CodeRunFailed, "run %s ended %s%s", id, r.Status, errSuffix(r.Error))
	}
	return outcome{output: r.Output}, nil
}

func runNotFound(err error, id string) error {
	if errors.Is(err, ErrNotFound) {
		return permanent(CodeNotFound, "run %q not found", id)
	}
	return err
}

func errSuffix(e *Error) string {
	if e == nil {
		return ""
	}
	return ": " + e.Code + ": " + e.Message
}

// awaitRecheck is how often a run waiting for another run to end looks again when that run
// is worked by another process; an end on this process wakes it at once.
const awaitRecheck = 2 * time.Second

// awaitRun returns run id if it has ended, else a suspension (with state) that checks again.
// A run the run may not reach with perm is not found, as one that does not exist.
func (s *stepExec) awaitRun(ctx context.Context, id string, perm auth.Permission, state any) (*Run, *suspension, error) {
	e := s.engine()
	r, err := e.reachRun(ctx, s.run(), perm, id)
	if err != nil {
		return nil, nil, runNotFound(err, id)
	}
	if r.Status.Terminal() {
		e.awaited(s.run().ID, id)
		return r, nil, nil
	}
	e.awaitEnd(s.run().ID, id)
	return nil, &suspension{until: e.now().Add(awaitRecheck), runStatus: StatusRunning, state: state}, nil
}
