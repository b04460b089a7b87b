package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/gorunner/gorunner/auth"
)

// RerunFromFailure starts a new run of failed run id, as Rerun does (same input and
// environment, the workflow's current version, RerunOf set, started by by), that takes the
// outputs of the steps completed before the failure as its own and begins at the step that
// failed. A step is taken over only while the new definition has the same step at the same
// place and the old run did not compensate it; from the first that is not, the new run
// runs every step. A run that did not fail is refused (an *InputError).
func (e *Engine) RerunFromFailure(ctx context.Context, id string, by *auth.Principal) (*Run, error) {
	old, err := e.store.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	if old.Status != StatusFailed {
		return nil, inputProblem("/from", "run %s is %s: only a failed run is rerun from its failure", id, old.Status)
	}
	a, err := e.Prepare(ctx, SubmitParams{Workflow: old.WorkflowID, Environment: old.Environment, Input: old.Input, RerunOf: id, By: by})
	if err != nil {
		return nil, err
	}
	takeOver(a.Run, old)
	res, err := e.Admit(ctx, a)
	if err != nil {
		return nil, err
	}
	return res.Run, nil
}

// takeOver copies into new run r the leading top-level records of old that completed or
// were skipped, step by step while the two agree (see RerunFromFailure). Each keeps its
// stepId in r; what it did and when is old's.
func takeOver(r, old *Run) {
	compensated := map[string]bool{}
	for _, rec := range old.Steps {
		if rec.Path != "" && rec.ID == compensateID {
			compensated[rec.Path[:strings.LastIndex(rec.Path, "/")]] = true
		}
	}
	for i, rec := range r.Steps {
		if rec.Path != "" || i >= len(old.Steps) {
			return
		}
		o := old.Steps[i]
		if o.Path != "" || o.ID != rec.ID || compensated[o.ID] || (o.Status != StepCompleted && o.Status != StepSkipped) {
			return
		}
		rec.Status, rec.Attempts, rec.Output, rec.Conflict = o.Status, o.Attempts, o.Output, o.Conflict
		rec.StartedAt, rec.FinishedAt, rec.Input, rec.History = o.StartedAt, o.FinishedAt, o.Input, o.History
	}
}
