package runner_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// readAll reads every field of r and its step records, as a caller showing it would.
func readAll(t *testing.T, r *runner.Run) {
	t.Helper()
	_, err := json.Marshal(r)
	require.NoError(t, err)
}

// unendedReads is a store whose reads never show a run ended: an ended run Get finds can
// only be the one the engine kept when its execution ended it.
type unendedReads struct{ runner.Store }

func (s unendedReads) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	r, err := s.Store.GetRun(ctx, id)
	if err == nil && r.Status.Terminal() {
		r.Status = runner.StatusRunning
	}
	return r, err
}

// TestEndedRunIsKeptUnchanged: the engine keeps the run an execution ended as it is, not a
// copy, and hands it out (Written, Get's copies of it). Under -race, readers racing the
// end of a run on a worker and of a run in its admission catch any change the engine makes
// to a run after keeping it.
func TestEndedRunIsKeptUnchanged(t *testing.T) {
	h := newHarness(t)
	open := make(chan struct{})
	gate := runner.StepHandlerFunc(func(ctx context.Context, _ *runner.StepContext) (any, error) {
		select {
		case <-open:
			return map[string]any{"n": 1}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	e := h.engine(runner.Config{Kinds: map[string]runner.StepHandler{"gate": gate}, AdmissionWork: noAdmissionBound}, unendedReads{h.store})
	onWorker := h.define(`
name: gated
input: {type: object}
steps:
  - {id: a, gate: {}}
  - {id: b, set: "${{ steps.a.output.n + 1 }}"}
  - {id: c, set: {done: "${{ steps.b.output }}"}}
`)
	inAdmission := h.define(`
name: pure
input: {type: object}
steps:
  - {id: a, set: {n: "${{ input.n }}"}}
  - {id: b, set: "${{ steps.a.output.n + 1 }}"}
`)
	ctx := context.Background()
	gated := h.submit(e, onWorker, `{}`)

	var wg sync.WaitGroup
	read := func(id string, written *runner.Run) {
		for ended := 0; ended < 20; {
			if written != nil {
				readAll(t, written)
			}
			r, err := e.Get(ctx, id)
			require.NoError(t, err)
			readAll(t, r)
			if r, err = e.Wait(ctx, id, time.Millisecond); err == nil {
				readAll(t, r)
			}
			if r.Status.Terminal() {
				ended++
			}
		}
	}
	for range 4 {
		wg.Go(func() { read(gated.ID, nil) })
	}
	for range 4 {
		wg.Go(func() {
			res, err := e.Submit(ctx, runner.SubmitParams{Workflow: inAdmission, Input: json.RawMessage(`{"n": 1}`)})
			require.NoError(t, err)
			require.Equal(t, runner.StatusCompleted, res.Written.Status)
			read(res.Run.ID, res.Written)
		})
	}
	close(open)
	wg.Wait()

	r, err := e.Get(ctx, gated.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, r.Status)
	require.JSONEq(t, `{"done": 2}`, string(r.Output))
	r.Steps[0].Status = runner.StepFailed
	again, err := e.Get(ctx, gated.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StepCompleted, again.Steps[0].Status, "Get hands out copies")
}
