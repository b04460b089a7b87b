package runner_test

import (
	"context"
	"encoding/json"
	"sync"
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

// TestEffectFreeRunEndsInItsAdmissionWithoutASlot: with every worker slot taken, a run
// whose steps have no effects still runs in its admission and is written ended in its one
// write, never claimed; a run with a step with effects is written pending as before, and
// claimed once a slot is free.
func TestEffectFreeRunEndsInItsAdmissionWithoutASlot(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	open := make(chan struct{})
	gate := runner.StepHandlerFunc(func(ctx context.Context, _ *runner.StepContext) (any, error) {
		select {
		case <-open:
			return 1, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	counter := &claimCounter{Store: h.store}
	e := h.engine(runner.Config{Concurrency: 1, Kinds: map[string]runner.StepHandler{"gate": gate}, AdmissionWork: noAdmissionBound}, counter)
	var opened sync.Once
	t.Cleanup(func() { opened.Do(func() { close(open) }) }) // before the engine stops
	gated := h.define("name: gated\ninput: {type: object}\nsteps:\n  - {id: a, gate: {}}\n")
	pure := h.define(oneStep)
	ctx := context.Background()
	held, err := e.Submit(ctx, runner.SubmitParams{Workflow: gated, Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, runner.StatusRunning, held.Written.Status, "the one slot is taken until the gate opens")

	res, err := e.Submit(ctx, runner.SubmitParams{Workflow: pure, Input: json.RawMessage(`{"n": 7}`)})
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, res.Written.Status, "ended in its admission with no slot free")
	stored, err := h.store.GetRun(ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, stored.Status)
	require.JSONEq(t, `{"n": 7}`, string(stored.Steps[0].Output))

	waiting, err := e.Submit(ctx, runner.SubmitParams{Workflow: gated, Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, runner.StatusPending, waiting.Written.Status, "a run with effects waits for a slot")
	require.Zero(t, counter.claimed.Load())

	opened.Do(func() { close(open) })
	for _, id := range []string{held.Run.ID, waiting.Run.ID} {
		final, err := e.Wait(ctx, id, 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, runner.StatusCompleted, final.Status)
	}
	require.Equal(t, int64(1), counter.claimed.Load(), "only the run with effects was claimed")
}
