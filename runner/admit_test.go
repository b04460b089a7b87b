package runner_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// claimCounter counts the runs ClaimRuns hands out.
type claimCounter struct {
	runner.Store
	claimed atomic.Int64
}

func (c *claimCounter) ClaimRuns(ctx context.Context, p runner.ClaimRunsParams) ([]runner.Claimed, error) {
	runs, err := c.Store.ClaimRuns(ctx, p)
	c.claimed.Add(int64(len(runs)))
	return runs, err
}

const oneStep = `
name: one
input: {type: object}
steps:
  - {id: a, set: {n: "${{ input.n }}"}}
`

// TestRunStartsWhereAdmitted: with a free worker slot, the admission takes the lease and the
// run is worked at once, never claimed; an engine with no free slot (here: not started)
// leaves the run due, and another engine claims and works it.
func TestRunStartsWhereAdmitted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		admitterRun bool // the admitting engine is started (has free slots)
		claims      int64
	}{
		{"free slot: started here", true, 0},
		{"no slot: claimed elsewhere", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			name := h.define(oneStep)
			counter := &claimCounter{Store: h.store}
			admitter := h.newEngine(runner.Config{}, counter)
			if tt.admitterRun {
				admitter = h.engine(runner.Config{}, counter)
			} else {
				h.engine(runner.Config{Owner: "other"}, counter)
			}
			res, err := admitter.Submit(context.Background(), runner.SubmitParams{Workflow: name, Input: json.RawMessage(`{"n": 1}`)})
			require.NoError(t, err)
			require.Equal(t, runner.StatusPending, res.Run.Status, "the answer is the run as admitted")
			final, err := admitter.Wait(context.Background(), res.Run.ID, 30*time.Second)
			require.NoError(t, err)
			require.Equal(t, runner.StatusCompleted, final.Status)
			require.Equal(t, tt.claims, counter.claimed.Load())
		})
	}
}

// TestSubmitRecordsTask: a run submitted as a task is stored as one whichever way it is
// admitted (worked at once, or written pending for a claim); other runs are not.
func TestSubmitRecordsTask(t *testing.T) {
	t.Parallel()
	for _, started := range []bool{true, false} {
		for _, task := range []bool{true, false} {
			h := newHarness(t)
			name := h.define(oneStep)
			e := h.newEngine(runner.Config{})
			if started {
				e = h.engine(runner.Config{})
			}
			res, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: name, Task: task})
			require.NoError(t, err)
			got, err := h.store.GetRun(context.Background(), res.Run.ID)
			require.NoError(t, err)
			require.Equal(t, task, got.Task, "started %v, task %v", started, task)
		}
	}
}
