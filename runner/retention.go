package runner

import (
	"context"
	"errors"
	"time"
)

// ErrRunActive is DeleteRun's refusal of a run that has not ended, or of a child run whose
// parent has not: only ended runs are deleted (REST: 409 CONFLICT).
var ErrRunActive = errors.New("run has not ended")

// RunKey is a run's place in the order of creation: creation time, then ID. SweepEnded
// walks runs in that order, oldest first, and resumes after one.
type RunKey struct {
	CreatedAt time.Time
	ID        string
}

// SweepParams is one batch of Store.SweepEnded.
type SweepParams struct {
	// WorkflowID, when set, keeps the walk to the runs of that workflow.
	WorkflowID string
	// EndedBefore is the cut: the runs that ended at or before it are deleted. Only runs
	// created at or before it can have, so the walk stops at the first created after it.
	EndedBefore time.Time
	// After resumes the walk after that run; nil starts it at the oldest run.
	After *RunKey
	// Limit bounds the runs the batch examines (deleted or kept), so that one batch holds
	// the store briefly however many runs it keeps.
	Limit int
}

// SweepResult is what one batch of Store.SweepEnded did.
type SweepResult struct {
	// Deleted is how many runs it deleted.
	Deleted int
	// Next is the last run it examined when the walk may go on (it examined p.Limit runs);
	// nil when it reached the end of the runs created at or before p.EndedBefore.
	Next *RunKey
}

// DeleteRun deletes an ended run now (DELETE /api/runs/{id}), with its steps, payloads and
// hooks. Unknown → ErrNotFound; not ended → ErrRunActive. This engine forgets it at once;
// another process sharing the store may answer it from the ended runs it keeps in memory
// until they pass it by (MaxEndedRunsKept).
func (e *Engine) DeleteRun(ctx context.Context, id string) error {
	if err := e.store.DeleteRun(ctx, id); err != nil {
		return err
	}
	e.finished.forget(id)
	return nil
}

// forget drops run id from the ended runs kept, if there: it was deleted. Its place in the
// order stays until it comes out, as a run no longer kept.
func (c *endedRuns) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.by[id]; ok {
		c.bytes -= k.size
		delete(c.by, id)
	}
}
