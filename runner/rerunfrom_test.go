package runner_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestRerunFromFailure: a failed run rerun from its failure is a new run (RerunOf set, same
// input) that takes over the outputs of the steps completed before the failure, without
// running them again, and begins at the failed step. A run that did not fail is refused.
func TestRerunFromFailure(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := newRecorder(t, 200, 404) // the second step fails for good, then succeeds
	name := h.define(fmt.Sprintf(`
name: resume-here
input: {type: object}
steps:
  - id: first
    http: {url: "%s/first"}
  - id: second
    http: {url: "%s/second/${{ input.n }}"}
  - id: third
    set: {first: "${{ steps.first.output.body.path }}", second: "${{ steps.second.output.status }}"}
`, srv.URL, srv.URL))
	failed := h.run(e, name, `{"n": 3}`, runner.StatusFailed)
	require.Equal(t, "second", failed.Error.Step)
	require.Len(t, srv.seen(), 2)

	ctx := context.Background()
	r, err := e.RerunFromFailure(ctx, failed.ID, nil)
	require.NoError(t, err)
	r = h.await(e, r.ID, runner.StatusCompleted)
	require.Equal(t, failed.ID, r.RerunOf)
	require.JSONEq(t, `{"n": 3}`, string(r.Input))
	require.JSONEq(t, `{"first": "/first", "second": 200}`, string(r.Output))
	seen := srv.seen()
	require.Len(t, seen, 3, "the first step is not run again")
	require.Equal(t, "/second/3", seen[2].path)
	first := step(r, "first")
	require.Equal(t, step(failed, "first").StartedAt, first.StartedAt, "the first step's record is the failed run's")
	require.NotEqual(t, step(failed, "first").StepID, first.StepID, "the new run's stepIds are its own")
	require.Equal(t, 1, step(r, "second").Attempts)

	_, err = e.RerunFromFailure(ctx, r.ID, nil)
	var ie *runner.InputError
	require.ErrorAs(t, err, &ie, "a completed run has no failure to start from")
}
