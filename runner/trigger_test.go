package runner_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestTriggers: a run records what started it: api by default, the submission's own, child
// for a workflow step's run, rerun for a rerun whatever was asked; an unknown type is refused.
func TestTriggers(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	e := h.engine(runner.Config{})
	h.define("name: kid\ninput: {type: object}\nsteps: [{id: a, set: 1}]\n")
	parent := h.define("name: parent\ninput: {type: object}\nsteps: [{id: call, workflow: {name: kid}}]\n")
	r := h.run(e, parent, `{}`, runner.StatusCompleted)
	require.Equal(t, runner.Trigger{Type: runner.TriggerAPI}, r.Trigger)
	kids, _, err := e.List(ctx, runner.ListRunsParams{Trigger: runner.TriggerChild, Limit: 10})
	require.NoError(t, err)
	require.Len(t, kids, 1)
	require.Equal(t, r.ID, kids[0].ParentRunID)

	at := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	res, err := e.Submit(ctx, runner.SubmitParams{Workflow: parent, Input: json.RawMessage(`{}`), Trigger: runner.ScheduleTrigger(3, at)})
	require.NoError(t, err)
	got, err := e.Get(ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, runner.Trigger{Type: runner.TriggerSchedule, Schedule: 3, At: at}, got.Trigger)

	again, err := e.Rerun(ctx, res.Run.ID, nil)
	require.NoError(t, err)
	require.Equal(t, runner.Trigger{Type: runner.TriggerRerun}, again.Trigger)

	_, err = e.Submit(ctx, runner.SubmitParams{Workflow: parent, Input: json.RawMessage(`{}`), Trigger: runner.Trigger{Type: "cron"}})
	require.ErrorContains(t, err, "unknown trigger")
}
