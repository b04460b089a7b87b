package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

func resume(t *testing.T, e *runner.Engine, token, payload string) string {
	t.Helper()
	id, err := e.Resume(context.Background(), runner.EnvProduction, token, json.RawMessage(payload))
	require.NoError(t, err)
	return id
}

func TestHookPayloadsInOrderExactlyOnce(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: inbox
input: {type: object}
steps:
  - {id: first, hook: {token: "inbox:${{ input.id }}"}}
  - {id: second, hook: {token: "inbox:${{ input.id }}"}}
  - {id: third, hook: {token: "inbox:${{ input.id }}"}}
result: ["${{ steps.first.output }}", "${{ steps.second.output }}", "${{ steps.third.output }}"]
`)
	_, err := e.Resume(context.Background(), "", "inbox:1", json.RawMessage(`1`))
	require.ErrorIs(t, err, runner.ErrNotFound, "no hook registered yet")

	r := h.run(e, name, `{"id": 1}`, runner.StatusWaiting)
	require.Equal(t, &runner.WaitingOn{Hook: "inbox:1"}, r.WaitingOn)
	hook, err := e.Hook(context.Background(), "", "inbox:1")
	require.NoError(t, err)
	require.Equal(t, r.ID, hook.RunID)

	for i := 1; i <= 3; i++ {
		require.Equal(t, r.ID, resume(t, e, "inbox:1", fmt.Sprint(i)))
	}
	// The run may have taken the three payloads and ended, releasing its token, before a
	// fourth comes: then there is no hook to send it to. Else it is queued, never taken.
	id, err := e.Resume(context.Background(), runner.EnvProduction, "inbox:1", json.RawMessage(`4`))
	if !errors.Is(err, runner.ErrNotFound) {
		require.NoError(t, err)
		require.Equal(t, r.ID, id)
	}
	r = h.await(e, r.ID, runner.StatusCompleted)
	require.JSONEq(t, `[1, 2, 3]`, string(r.Output))

	_, err = e.Hook(context.Background(), "", "inbox:1")
	require.ErrorIs(t, err, runner.ErrNotFound, "the token is released when the run ends")
}

// patientDef waits on its run's hook "t:<run ID>" for an hour at most.
const patientDef = `
name: patient
input: {type: object}
steps:
  - {id: confirm, hook: {token: "t:${{ run.id }}", timeout: 1h}}
`

func TestHookTimeout(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(patientDef)
	r := h.run(e, name, `{}`, runner.StatusWaiting)
	h.clock.Advance(time.Hour)
	r = h.await(e, r.ID, runner.StatusFailed)
	require.Equal(t, runner.CodeHookTimeout, r.Error.Code)
	require.Equal(t, "confirm", r.Error.Step)
}

// conflictSetup starts an owner run waiting on token order:1 and a challenger workflow whose
// hook on the same token has the policy.
func conflictSetup(t *testing.T, policy string) (*harness, *runner.Engine, *runner.Run, string) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	owner := h.define(`
name: owner
input: {type: object}
steps:
  - {id: wait, hook: {token: "order:1"}}
result: {got: "${{ steps.wait.output }}"}
`)
	challenger := h.define(fmt.Sprintf(`
name: challenger
input: {type: object}
steps:
  - {id: claim, hook: {token: "order:1", onConflict: %s}}
  - {id: next, set: {conflict: "${{ steps.claim.conflict }}"}}
`, policy))
	return h, e, h.run(e, owner, `{}`, runner.StatusWaiting), challenger
}

func TestHookConflictPolicies(t *testing.T) {
	tests := []struct {
		policy string
		check  func(t *testing.T, h *harness, e *runner.Engine, owner *runner.Run, challenger string)
	}{
		{"fail", func(t *testing.T, h *harness, e *runner.Engine, owner *runner.Run, challenger string) {
			r := h.run(e, challenger, `{}`, runner.StatusFailed)
			require.Equal(t, runner.CodeHookConflict, r.Error.Code)
			require.Contains(t, r.Error.Message, owner.ID)
		}},
		{"reject", func(t *testing.T, h *harness, e *runner.Engine, owner *runner.Run, challenger string) {
			r := h.run(e, challenger, `{}`, runner.StatusCompleted)
			require.JSONEq(t, fmt.Sprintf(`{"status": "duplicate", "runId": %q}`, owner.ID), string(r.Output))
			require.Equal(t, runner.StepSkipped, step(r, "next").Status)
		}},
		{"continue", func(t *testing.T, h *harness, e *runner.Engine, owner *runner.Run, challenger string) {
			r := h.run(e, challenger, `{}`, runner.StatusCompleted)
			require.JSONEq(t, fmt.Sprintf(`{"conflict": {"runId": %q}}`, owner.ID), string(r.Output))
			require.JSONEq(t, `null`, string(step(r, "claim").Output))
		}},
		{"forward", func(t *testing.T, h *harness, e *runner.Engine, owner *runner.Run, challenger string) {
			r := h.run(e, challenger, `{"amount": 3}`, runner.StatusCompleted)
			require.JSONEq(t, fmt.Sprintf(`{"status": "forwarded", "runId": %q}`, owner.ID), string(r.Output))
			o := h.await(e, owner.ID, runner.StatusCompleted)
			require.JSONEq(t, `{"got": {"amount": 3}}`, string(o.Output))
		}},
		{"adopt", func(t *testing.T, h *harness, e *runner.Engine, owner *runner.Run, challenger string) {
			r := h.submit(e, challenger, `{}`)
			require.Never(t, func() bool {
				got, err := e.Get(context.Background(), r.ID)
				require.NoError(t, err)
				return got.Status.Terminal()
			}, 100*time.Millisecond, 10*time.Millisecond, "adopt waits for the owner")
			resume(t, e, "order:1", `"paid"`)
			got := h.await(e, r.ID, runner.StatusCompleted)
			require.JSONEq(t, `{"got": "paid"}`, string(got.Output))
		}},
		{"supersede", func(t *testing.T, h *harness, e *runner.Engine, owner *runner.Run, challenger string) {
			r := h.run(e, challenger, `{}`, runner.StatusWaiting)
			require.Equal(t, runner.StatusCancelled, h.await(e, owner.ID, runner.StatusCancelled).Status)
			hook, err := e.Hook(context.Background(), "", "order:1")
			require.NoError(t, err)
			require.Equal(t, r.ID, hook.RunID)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			t.Parallel()
			h, e, owner, challenger := conflictSetup(t, tt.policy)
			tt.check(t, h, e, owner, challenger)
		})
	}
}

func startWorkflow(h *harness, policy string) string {
	return h.define(fmt.Sprintf(`
name: start-%s
input: {type: object, properties: {order: {type: string}}}
start: {token: "order:${{ input.order }}", onConflict: %s}
steps:
  - {id: wait, hook: {token: "order:${{ input.order }}"}}
`, policy, policy))
}

func TestStartTokenRace(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := startWorkflow(h, "reject")
	const n = 50
	results := make([]*runner.SubmitResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: name, Input: json.RawMessage(`{"order": "42"}`)})
			require.NoError(t, err)
			results[i] = res
		})
	}
	wg.Wait()
	var owners []string
	for _, res := range results {
		if !res.Reused {
			owners = append(owners, res.Run.ID)
		}
	}
	require.Len(t, owners, 1, "exactly one run owns the token")
	for _, res := range results {
		require.Equal(t, owners[0], res.Run.ID)
	}
	runs, _, err := e.List(context.Background(), runner.ListRunsParams{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
}

func TestStartTokenPolicies(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	e := h.engine(runner.Config{})
	submit := func(name, input string) (*runner.SubmitResult, error) {
		return e.Submit(ctx, runner.SubmitParams{Workflow: name, Input: json.RawMessage(input)})
	}

	fail := startWorkflow(h, "fail")
	first, err := submit(fail, `{"order": "1"}`)
	require.NoError(t, err)
	_, err = submit(fail, `{"order": "1"}`)
	var conflict *runner.TokenConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, first.Run.ID, conflict.OwnerRunID)

	forward := startWorkflow(h, "forward")
	first, err = submit(forward, `{"order": "2"}`)
	require.NoError(t, err)
	h.await(e, first.Run.ID, runner.StatusWaiting)
	res, err := submit(forward, `{"order": "2"}`)
	require.NoError(t, err)
	require.True(t, res.Forwarded)
	require.Equal(t, first.Run.ID, res.Run.ID)
	done := h.await(e, first.Run.ID, runner.StatusCompleted)
	require.JSONEq(t, `{"order": "2"}`, string(done.Output), "the owner took the forwarded input")

	supersede := startWorkflow(h, "supersede")
	first, err = submit(supersede, `{"order": "3"}`)
	require.NoError(t, err)
	res, err = submit(supersede, `{"order": "3"}`)
	require.NoError(t, err)
	require.False(t, res.Reused)
	require.NotEqual(t, first.Run.ID, res.Run.ID)
	old, err := e.Get(ctx, first.Run.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, old.Status)

	_, err = submit(fail, `{"order": "4"}`)
	require.NoError(t, err, "another token is free")
	require.False(t, errors.Is(err, runner.ErrHookConflict))
}
