package runner

import (
	"errors"
	"time"
)

// ErrRunActive is DeleteRun's refusal of a run that has not ended: only ended runs are
// deleted (REST: 409 CONFLICT).
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
