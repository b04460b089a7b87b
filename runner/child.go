package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/schemas"
)

// childState is a workflow step's durable state: the child run's ID, chosen and saved
// before the child is created, so a crash in between never starts a second child.
type childState struct {
	Child string `json:"childRunId"`
}

// runWorkflow starts a child run in the parent's environment and waits durably for it; the
// child's end wakes the parent through the store.
func runWorkflow(ctx context.Context, s *stepExec) (outcome, error) {
	var st childState
	if err := s.state(&st); err != nil {
		return outcome{}, err
	}
	if st.Child == "" {
		st.Child = s.derivedChild()
	}
	if st.Child == "" {
		st.Child = uuid.Must(uuid.NewV7()).String()
		if err := s.checkpoint(ctx, st); err != nil {
			return outcome{}, err
		}
	}
	_, err := s.engine().store.GetRun(ctx, st.Child)
	if errors.Is(err, ErrNotFound) {
		id, err := s.startChild(ctx, st.Child)
		if err != nil {
			return outcome{}, err
		}
		if id != st.Child {
			st.Child = id
			if err := s.checkpoint(ctx, st); err != nil {
				return outcome{}, err
			}
		}
	} else if err != nil {
		return outcome{}, err
	}
	r, wait, err := s.awaitRun(ctx, st.Child, auth.RunsRead, st)
	if err != nil || wait != nil {
		return outcome{wait: wait}, err
	}
	if r.Status != StatusCompleted {
		return outcome{}, permanent(CodeChildFailed, "child run %s ended %s%s", r.ID, r.Status, errSuffix(r.Error))
	}
	return outcome{output: r.Output}, nil
}

// startChild admits the child run under id and returns the run to wait for: the child, or
// the owner of the child workflow's start token when its policy reuses that run.
func (s *stepExec) startChild(ctx context.Context, id string) (string, error) {
	var ws schemas.WorkflowStep
	if err := s.eval(s.st.Workflow, &ws); err != nil {
		return "", err
	}
	e, parent := s.engine(), s.run()
	if depth := parent.Depth + 1; depth > e.cfg.MaxDepth {
		return "", permanent(CodeDepthLimit, "step %q: workflow %q would run nested %d deep; at most %d workflow steps may nest",
			s.st.ID, ws.Name, depth, e.cfg.MaxDepth)
	}
	t, err := e.workflows.Resolve(ctx, ws.Name, parent.Environment)
	if err == nil && !mayStart(parent, t) { // refused exactly as a workflow that does not exist
		err = fmt.Errorf("workflow %q: %w", ws.Name, ErrWorkflowNotFound)
	}
	if errors.Is(err, ErrWorkflowNotFound) || errors.Is(err, ErrNotPublished) {
		return "", permanent(CodeNotFound, "step %q: workflow %q: %v", s.st.ID, ws.Name, err)
	}
	if err != nil {
		return "", err
	}
	c, err := e.defs.get(t.Definition)
	if err != nil {
		return "", permanent(CodeDefinition, "step %q: workflow %q: %v", s.st.ID, ws.Name, err)
	}
	if ws.Input == nil {
		ws.Input = map[string]any{}
	}
	raw, err := json.Marshal(ws.Input)
	if err != nil {
		return "", permanent(CodeInvalidStep, "step %q: input: %v", s.st.ID, err)
	}
	input, _, err := checkInput(c, raw)
	if err != nil {
		return "", permanent(CodeValidation, "step %q: workflow %q: %v", s.st.ID, ws.Name, err)
	}
	child := e.newRun(t, parent.Environment, input)
	child.ID, child.ParentRunID, child.Depth, child.StartedBy = id, parent.ID, parent.Depth+1, parent.StartedBy
	child.Trigger = Trigger{Type: TriggerChild}
	child.ActsFor = parent.ActsFor.limitedBy(t.Publisher)
	ctx, end := e.TraceAdmission(ctx, TriggerChild)
	child.TraceParent = e.traceParent(ctx)
	res, err := e.admitChild(ctx, c, child, parent)
	end(res.Answered(), err)
	var conflict *TokenConflictError
	if errors.As(err, &conflict) {
		return "", permanent(CodeHookConflict, "step %q: %v", s.st.ID, err)
	}
	if err != nil {
		return "", err
	}
	return res.Run.ID, nil
}

// cancelChild asks the child run a cancelled workflow step waits for, if any, to cancel; its
// worker cancels the child's own children in turn. A child already ended, or never created,
// is no error.
func (e *Engine) cancelChild(ctx context.Context, rec *StepRecord) error {
	var st childState
	if len(rec.State) == 0 || json.Unmarshal(rec.State, &st) != nil || st.Child == "" {
		return nil
	}
	err := e.requestCancel(context.WithoutCancel(ctx), st.Child)
	if err != nil && !errors.Is(err, ErrFinished) && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}
