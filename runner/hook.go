package runner

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/schemas"
)

// hookState is a hook step's durable state: its evaluated definition and, under adopt or
// supersede, the owner run it waits for.
type hookState struct {
	Token    string          `json:"token"`
	Policy   string          `json:"policy,omitempty"`
	Deadline *time.Time      `json:"deadline,omitempty"`
	Payload  json.RawMessage `json:"payload,omitempty"`
	Awaiting string          `json:"awaiting,omitempty"`
	Tries    int             `json:"tries,omitempty"`
	// Ask is the step's ask as evaluated on the first attempt: the one evaluation that
	// every face shows (WaitingOn.Ask).
	Ask *schemas.HookAsk `json:"ask,omitempty"`
}

// runHook claims the token (held until the run ends) and takes the next payload queued for
// it, waiting durably until one comes or the hook times out. Another owner → onConflict.
func runHook(ctx context.Context, s *stepExec) (outcome, error) {
	st, err := s.hookState()
	if err != nil {
		return outcome{}, err
	}
	if st.Awaiting != "" {
		r, wait, err := s.awaitRun(ctx, st.Awaiting, conflictPermission(st.Policy), st)
		if err != nil || wait != nil {
			return outcome{wait: wait}, err
		}
		if st.Policy == schemas.OnConflictAdopt {
			return adopted(r)
		}
		st.Awaiting = ""
	}
	e := s.engine()
	for {
		err := e.store.ClaimToken(ctx, &Hook{Environment: s.run().Environment, Token: st.Token, RunID: s.run().ID, CreatedAt: e.now()})
		if err == nil {
			return s.nextPayload(ctx, st)
		}
		var conflict *TokenConflictError
		if !errors.As(err, &conflict) {
			return outcome{}, err
		}
		out, again, err := s.hookConflict(ctx, st, conflict)
		if !again {
			return out, err
		}
	}
}

// hookState is the step's state, evaluated from its definition on the first attempt.
func (s *stepExec) hookState() (*hookState, error) {
	st := &hookState{}
	if err := s.state(st); err != nil || st.Token != "" {
		return st, err
	}
	var hs schemas.HookStep
	if err := s.eval(s.st.Hook, &hs); err != nil {
		return nil, err
	}
	if hs.Token == "" {
		return nil, permanent(CodeInvalidStep, "step %q: the hook token is empty", s.st.ID)
	}
	st.Token, st.Policy, st.Ask = hs.Token, hs.OnConflict, hs.Ask
	timeout := hs.Timeout.Std()
	if timeout <= 0 {
		timeout = s.st.Timeout.Std()
	}
	if timeout > 0 {
		d := s.engine().now().Add(timeout)
		st.Deadline = &d
	}
	if st.Policy == schemas.OnConflictForward {
		st.Payload = s.run().Input
		if hs.Payload != nil {
			st.Payload, _ = json.Marshal(hs.Payload)
		}
	}
	return st, nil
}

func (s *stepExec) nextPayload(ctx context.Context, st *hookState) (outcome, error) {
	e := s.engine()
	p, err := e.store.NextPayload(ctx, s.run().ID, s.run().Environment, st.Token)
	if err == nil {
		return outcome{output: p.Payload, consume: p.Seq}, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return outcome{}, err
	}
	w := &suspension{runStatus: StatusWaiting, waitingOn: &WaitingOn{Hook: st.Token, Ask: st.Ask}, state: st}
	if st.Deadline != nil {
		if !e.now().Before(*st.Deadline) {
			return outcome{}, permanent(CodeHookTimeout, "no payload for token %q before %s", st.Token, st.Deadline.Format(time.RFC3339))
		}
		w.until = *st.Deadline
	}
	return outcome{wait: w}, nil
}

// hookConflict applies onConflict; again means claim the token once more. The policy acts
// on the owner only as the run may reach it: else the step fails HOOK_CONFLICT naming no
// run (SPEC §6).
func (s *stepExec) hookConflict(ctx context.Context, st *hookState, c *TokenConflictError) (out outcome, again bool, err error) {
	perm := conflictPermission(st.Policy)
	if _, err := s.engine().reachRun(ctx, s.run(), perm, c.OwnerRunID); err != nil {
		if errors.Is(err, ErrNotFound) {
			return outcome{}, false, permanent(CodeHookConflict, "%v", hiddenConflict(c))
		}
		return outcome{}, false, err
	}
	owner := map[string]any{"runId": c.OwnerRunID}
	switch st.Policy {
	case schemas.OnConflictReject:
		return outcome{output: map[string]any{"status": "duplicate", "runId": c.OwnerRunID}, endRun: true}, false, nil
	case schemas.OnConflictContinue:
		return outcome{conflict: owner}, false, nil
	case schemas.OnConflictAdopt:
		st.Awaiting = c.OwnerRunID
		r, wait, err := s.awaitRun(ctx, c.OwnerRunID, perm, st)
		if err != nil || wait != nil {
			return outcome{wait: wait}, false, err
		}
		out, err := adopted(r)
		return out, false, err
	case schemas.OnConflictForward:
		return s.forward(ctx, st, c)
	case schemas.OnConflictSupersede:
		return s.supersede(ctx, st, c)
	}
	return outcome{}, false, permanent(CodeHookConflict, "%v", c)
}

func (s *stepExec) forward(ctx context.Context, st *hookState, c *TokenConflictError) (outcome, bool, error) {
	e := s.engine()
	_, err := e.store.EnqueuePayload(ctx, c.Environment, c.Token, st.Payload, e.now())
	if errors.Is(err, ErrNotFound) {
		return s.retryClaim(st, c)
	}
	if err != nil {
		return outcome{}, false, err
	}
	e.wake()
	return outcome{output: map[string]any{"status": "forwarded", "runId": c.OwnerRunID}, endRun: true}, false, nil
}

// supersede cancels the owner and waits for it to end before claiming again.
func (s *stepExec) supersede(ctx context.Context, st *hookState, c *TokenConflictError) (outcome, bool, error) {
	if out, again, err := s.retryClaim(st, c); !again {
		return out, again, err
	}
	if err := s.engine().requestCancel(ctx, c.OwnerRunID); err != nil && !errors.Is(err, ErrFinished) {
		return outcome{}, false, err
	}
	st.Awaiting = c.OwnerRunID
	_, wait, err := s.awaitRun(ctx, c.OwnerRunID, auth.RunsWrite, st)
	if err != nil || wait != nil {
		return outcome{wait: wait}, false, err
	}
	st.Awaiting = ""
	return outcome{}, true, nil
}

// retryClaim counts one more try at the token; past maxStartTries the step fails.
func (s *stepExec) retryClaim(st *hookState, c *TokenConflictError) (outcome, bool, error) {
	st.Tries++
	if st.Tries > maxStartTries {
		return outcome{}, false, permanent(CodeHookConflict, "token %q is still owned by run %s after %d tries", c.Token, c.OwnerRunID, maxStartTries)
	}
	return outcome{}, true, nil
}

// adopted completes the run with the output of the owner run it waited for.
func adopted(r *Run) (outcome, error) {
	if r.Status != StatusCompleted {
		return outcome{}, permanent(CodeRunFailed, "adopted run %s ended %s%s", r.ID, r.Status, errSuffix(r.Error))
	}
	return outcome{output: r.Output, endRun: true}, nil
}
