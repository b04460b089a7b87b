package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/schemas"
)

// outcome is how an attempt of a step ended, when it did not fail.
type outcome struct {
	output   any
	conflict any
	// evaluated says output is a template's result, built for this step alone (no step
	// kind or handler holds on to it), so what expressions see of it need not be a copy.
	evaluated bool
	// consume is the queued payload deleted in the same write that completes the step.
	consume int64
	// endRun completes the whole run with output (hook conflicts under reject, adopt,
	// forward); the steps left are skipped.
	endRun bool
	// wait, when set, means the step is not done: the run waits, durably.
	wait *suspension
}

// suspension is a durable wait: the step's state to resume from and the run's wake-up.
type suspension struct {
	// until is when a worker should look again; zero: only an event (payload, cancel,
	// child's end) wakes the run.
	until time.Time
	// runStatus is StatusWaiting for waits users see (hook, sleep), else StatusRunning.
	runStatus Status
	waitingOn *WaitingOn
	state     any
	// at is the index of the waiting step's record, set by suspend.
	at int
}

// stepExec is one step of an execution, handed to its kind.
type stepExec struct {
	x    *execution
	i    int
	rec  *StepRecord
	st   *schemas.Step
	kind *stepKind
	// inFlight says the attempt counts in the engine's http bounds until leave.
	inFlight bool
	// started is when this pass began the attempt (zero: it began in an earlier pass, as a
	// wait's); request and status are an http attempt's request line and answer, for the
	// step's history (recordAttempt).
	started time.Time
	request string
	status  int
}

func (s *stepExec) engine() *Engine { return s.x.e }
func (s *stepExec) run() *Run       { return s.x.r }

// leave counts the step's attempt as no longer in flight, if it was.
func (s *stepExec) leave() {
	if s.inFlight {
		s.inFlight = false
		s.engine().httpBound.done(s.run().WorkflowID)
	}
}

// skip evaluates the step's if; a falsy value skips the step.
func (s *stepExec) skip() (bool, error) {
	if s.st.If == "" {
		return false, nil
	}
	v, err := s.evalKey("if", func() (any, error) { return s.st.If, nil }, 0)
	if err != nil {
		return false, err
	}
	return !expression.Truthy(v), nil
}

// eval evaluates body, the step kind's definition, with its expressions, and decodes the
// value into dst.
func (s *stepExec) eval(body, dst any) error {
	v, err := s.evalKey(s.kind.Name, func() (any, error) { return toJSONValue(body) }, s.rec.Attempts)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err == nil {
		s.rec.Input = recordedInput(raw)
		err = json.Unmarshal(raw, dst)
	}
	if err != nil {
		return evalFailed(err, "step %q: the evaluated %s step is not valid: %v", s.st.ID, s.kind.Name, err)
	}
	return nil
}

func (s *stepExec) evalKey(key string, src func() (any, error), attempt int) (any, error) {
	return s.evalIn(s.x.env(s.i, attempt), key, src)
}

// evalIn evaluates the step's template key (compiled from src() the first time) in sc.
func (s *stepExec) evalIn(sc *expression.Scope, key string, src func() (any, error)) (any, error) {
	t, err := s.x.c.template(templateKey{s.x.nodeAt(s.i), key}, src)
	if err != nil {
		return nil, permanent(CodeExpression, "step %q: %v", PathOf(s.rec), err)
	}
	v, err := t.EvalIn(sc)
	if err != nil {
		return nil, evalFailed(err, "step %q: %v", PathOf(s.rec), err)
	}
	return v, nil
}

// state decodes the step's durable state into dst; no state leaves dst as it is.
func (s *stepExec) state(dst any) error {
	if len(s.rec.State) == 0 {
		return nil
	}
	return json.Unmarshal(s.rec.State, dst)
}

// errStateLeaseLost is checkpoint's error when the save found the lease lost. It is the
// engine's own, so that no step kind's error can pass for it and end the pass unreleased.
var errStateLeaseLost = fmt.Errorf("the run's lease is lost: %w", ErrLeaseLost)

// checkpoint saves v as the step's state before the step goes on, so that work done outside
// the run (a child run created) is found again after a crash.
func (s *stepExec) checkpoint(ctx context.Context, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.x.touch(s.i)
	s.rec.State = raw
	switch s.x.save(ctx, SaveOptions{}) {
	case flowNext:
		return nil
	case flowKeep: // the lease is lost: the worker that holds the run now makes the step
		return fmt.Errorf("saving the state of step %q: %w", s.st.ID, errStateLeaseLost)
	}
	return fmt.Errorf("saving the state of step %q failed", s.st.ID)
}

// retryPolicy is the step's retry with defaults filled in.
func retryPolicy(st *schemas.Step, k *stepKind) schemas.Retry {
	p := schemas.Retry{
		MaxAttempts:        k.attempts,
		InitialInterval:    schemas.Duration(time.Second),
		MaxInterval:        schemas.Duration(time.Minute),
		BackoffCoefficient: 2,
	}
	if r := st.Retry; r != nil {
		if r.MaxAttempts > 0 {
			p.MaxAttempts = r.MaxAttempts
		}
		if r.InitialInterval > 0 {
			p.InitialInterval = r.InitialInterval
		}
		if r.MaxInterval > 0 {
			p.MaxInterval = r.MaxInterval
		}
		if r.BackoffCoefficient >= 1 {
			p.BackoffCoefficient = r.BackoffCoefficient
		}
	}
	return p
}

// backoff is the delay before the attempt after attempt: exponential, capped, with up to 20%
// jitter taken off so that many runs failing together do not retry together; a server's
// Retry-After is a floor, itself at most schemas.MaxDuration so that the stored wake-up time
// cannot overflow.
func backoff(p schemas.Retry, attempt int, retryAfter time.Duration) time.Duration {
	d := float64(p.InitialInterval) * math.Pow(p.BackoffCoefficient, float64(attempt-1))
	d = min(d, float64(p.MaxInterval))
	d -= d * 0.2 * rand.Float64()
	return max(time.Duration(d), min(retryAfter, schemas.MaxDuration))
}
