package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// A version published before publishers were recorded limits its runs by no publisher: a
// run a principal starts acts for that principal alone, and a webhook's run (started by no
// principal) acts for no one, so it reaches no other workflow's run. A run of the same
// workflow it always reaches.
func TestAuthorityOfUnrecordedPublisher(t *testing.T) {
	h := newHarness(t)
	h.flows.unrecorded = true
	e := h.engine(runner.Config{})
	target := h.define(`
name: target
input: {type: object}
steps: [{id: wait, hook: {token: "target:${{ input.k }}"}}]
`)
	actor := h.define(`
name: actor
input: {type: object}
steps: [{id: status, run: {action: status, runId: "${{ input.runId }}"}}]
`)
	tr := h.run(e, target, `{"k": 1}`, runner.StatusWaiting)
	input := json.RawMessage(fmt.Sprintf(`{"runId": %q}`, tr.ID))
	start := func(by *auth.Principal) *runner.Run {
		res, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: actor, By: by, Input: input})
		require.NoError(t, err)
		return res.Run
	}

	hook := h.await(e, start(nil).ID, runner.StatusFailed)
	require.Equal(t, runner.CodeNotFound, hook.Error.Code, "a webhook's run of such a version acts for no one")

	reader := &auth.Principal{ID: "reader", Scopes: auth.Scopes{{Permission: auth.RunsRead, Workflow: "target"}}}
	read := h.await(e, start(reader).ID, runner.StatusCompleted)
	require.JSONEq(t, `"waiting"`, string(step(read, "status").Output), "a principal's run acts for it")

	writer := &auth.Principal{ID: "writer", Scopes: auth.Scopes{{Permission: auth.RunsWrite, Workflow: "actor"}}}
	denied := h.await(e, start(writer).ID, runner.StatusFailed)
	require.Equal(t, runner.CodeNotFound, denied.Error.Code, "within that principal's scopes only")

	self := h.define(`
name: self
input: {type: object}
steps:
  - {id: status, run: {action: status, runId: "${{ input.runId }}"}}
  - {id: wait, hook: {token: "self:${{ input.k }}"}}
`)
	first := h.run(e, self, `{"k": 1, "runId": "none"}`, runner.StatusFailed)
	res, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: self, Input: json.RawMessage(fmt.Sprintf(`{"k": 2, "runId": %q}`, first.ID))})
	require.NoError(t, err)
	own := h.await(e, res.Run.ID, runner.StatusWaiting)
	require.JSONEq(t, `"failed"`, string(step(own, "status").Output), "a run of its own workflow it reaches, acting for no one")
}
