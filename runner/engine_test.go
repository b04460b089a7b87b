package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

func TestSetStepsAndResult(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: greet
input: {type: object, properties: {name: {type: string}}, required: [name]}
steps:
  - id: a
    set: {greeting: "hello ${{ input.name }}", n: 2}
  - id: b
    set: "${{ steps.a.output.n * 21 }}"
  - id: c
    set: {who: "${{ run.workflow }}", attempt: "${{ step.attempt }}", id: "${{ step.stepId }}"}
result: {greeting: "${{ steps.a.output.greeting }}", answer: "${{ steps.b.output }}"}
`)
	r := h.run(e, name, `{"name": "Ada"}`, runner.StatusCompleted)
	require.JSONEq(t, `{"greeting": "hello Ada", "answer": 42}`, string(r.Output))
	require.Equal(t, map[string]any{"who": "greet", "attempt": 1.0, "id": step(r, "c").StepID}, jsonOf(t, step(r, "c").Output))
	ids := map[string]bool{}
	for _, s := range r.Steps {
		require.Equal(t, runner.StepCompleted, s.Status)
		require.Equal(t, 1, s.Attempts)
		require.NotNil(t, s.FinishedAt)
		ids[s.StepID] = true
	}
	require.Len(t, ids, 3, "stepIds differ between steps")
	require.NotNil(t, r.StartedAt)
	require.NotNil(t, r.FinishedAt)
}

func TestDefaultResultIsLastStepOutput(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: last
input: {type: object}
steps:
  - {id: a, set: 1}
  - {id: b, set: {done: true}}
`)
	r := h.run(e, name, `{}`, runner.StatusCompleted)
	require.JSONEq(t, `{"done": true}`, string(r.Output))
}

func TestIfSkipsStep(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: branch
input: {type: object, properties: {go: {type: boolean}}}
steps:
  - id: maybe
    if: "${{ input.go }}"
    set: ran
  - id: after
    set: {maybe: "${{ steps.maybe.output }}"}
`)
	tests := []struct {
		input  string
		status runner.StepStatus
		output string
	}{
		{`{"go": true}`, runner.StepCompleted, `{"maybe": "ran"}`},
		{`{"go": false}`, runner.StepSkipped, `{"maybe": null}`},
		{`{}`, runner.StepSkipped, `{"maybe": null}`},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			r := h.run(e, name, tt.input, runner.StatusCompleted)
			require.Equal(t, tt.status, step(r, "maybe").Status)
			require.JSONEq(t, tt.output, string(r.Output))
		})
	}
}

func TestFailStep(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: failing
input: {type: object}
steps:
  - {id: first, set: 1}
  - id: stop
    fail: {message: "no stock for ${{ input.sku }}", code: "${{ input.code }}"}
  - {id: never, set: 2}
`)
	tests := []struct{ input, code string }{
		{`{"sku": "x1"}`, runner.CodeFailed},
		{`{"sku": "x1", "code": "OUT_OF_STOCK"}`, "OUT_OF_STOCK"},
	}
	for _, tt := range tests {
		r := h.run(e, name, tt.input, runner.StatusFailed)
		require.Equal(t, &runner.Error{Code: tt.code, Message: "no stock for x1", Step: "stop"}, r.Error)
		require.Equal(t, runner.StepFailed, step(r, "stop").Status)
		require.Equal(t, runner.StepSkipped, step(r, "never").Status)
	}
}

func TestRunTimeExpressionError(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: broken
input: {type: object}
steps:
  - id: compute
    set: "${{ int(input.n) }}"
`)
	r := h.run(e, name, `{"n": "abc"}`, runner.StatusFailed)
	require.Equal(t, runner.CodeExpression, r.Error.Code)
	require.Equal(t, "compute", r.Error.Step)
	require.Contains(t, r.Error.Message, `step "compute"`)
	require.Contains(t, r.Error.Message, "int(input.n)")
}

func TestOutputIsCheckedAgainstTheOutputSchema(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: typed
input: {type: object}
output:
  type: object
  properties: {message: {type: string}, count: {type: integer, minimum: 0}}
  required: [message]
steps:
  - id: build
    set: "${{ input.out }}"
`)
	tests := []struct {
		name, input, problem string
	}{
		{"conforming", `{"out": {"message": "hi", "count": 2}}`, ""},
		{"wrong type", `{"out": {"message": 3}}`, "/message: "},
		{"missing property", `{"out": {"count": 1}}`, "/message: "},
		{"below minimum", `{"out": {"message": "hi", "count": -1}}`, "/count: "},
		{"not an object", `{"out": "hi"}`, "the output does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.problem == "" {
				r := h.run(e, name, tt.input, runner.StatusCompleted)
				require.JSONEq(t, `{"message": "hi", "count": 2}`, string(r.Output))
				return
			}
			r := h.run(e, name, tt.input, runner.StatusFailed)
			require.Equal(t, runner.CodeOutputInvalid, r.Error.Code)
			require.Contains(t, r.Error.Message, tt.problem)
			require.Empty(t, r.Error.Step, "the output is the run's, not a step's")
			require.Equal(t, runner.StepCompleted, step(r, "build").Status)
		})
	}
}

func TestSubmitValidatesInput(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: strict
input: {type: object, properties: {n: {type: integer}}, required: [n]}
steps: [{id: a, set: 1}]
`)
	for _, input := range []string{`{}`, `{"n": "x"}`, `[1]`, `not json`} {
		_, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: name, Input: json.RawMessage(input)})
		require.ErrorIs(t, err, runner.ErrInvalidInput, input)
		var ie *runner.InputError
		require.ErrorAs(t, err, &ie)
		require.NotEmpty(t, ie.Problems)
	}
	runs, _, err := e.List(context.Background(), runner.ListRunsParams{})
	require.NoError(t, err)
	require.Empty(t, runs, "nothing is written for an invalid input")

	_, err = e.Submit(context.Background(), runner.SubmitParams{Workflow: "nope", Input: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, runner.ErrWorkflowNotFound)
}

func TestCustomKind(t *testing.T) {
	h := newHarness(t)
	var calls atomic.Int32
	var mu sync.Mutex
	var seen []*runner.StepContext
	charge := runner.StepHandlerFunc(func(_ context.Context, sc *runner.StepContext) (any, error) {
		mu.Lock()
		seen = append(seen, sc)
		mu.Unlock()
		params := sc.Params.(map[string]any)
		switch n := calls.Add(1); {
		case params["mode"] == "permanent":
			return nil, runner.Permanent(errors.New("card declined"))
		case n < 3:
			return nil, errors.New("gateway busy")
		}
		return map[string]any{"charged": params["amount"]}, nil
	})
	e := h.engine(runner.Config{Kinds: map[string]runner.StepHandler{"charge": charge}})
	name := h.define(`
name: custom
input: {type: object}
steps:
  - id: pay
    charge: {amount: "${{ input.amount }}", mode: "${{ input.mode }}"}
    retry: {maxAttempts: 3, initialInterval: 1ms}
`)
	r := h.run(e, name, `{"amount": 5}`, runner.StatusCompleted)
	require.JSONEq(t, `{"charged": 5}`, string(r.Output))
	require.Equal(t, 3, step(r, "pay").Attempts)
	mu.Lock()
	attempts := append([]*runner.StepContext(nil), seen...)
	mu.Unlock()
	require.Len(t, attempts, 3)
	for i, sc := range attempts {
		require.Equal(t, step(r, "pay").StepID, sc.StepID, "same stepId on every attempt")
		require.Equal(t, i+1, sc.Attempt)
		require.Equal(t, "pay", sc.StepName)
		require.Equal(t, r.ID, sc.RunID)
	}

	calls.Store(0)
	r = h.run(e, name, `{"amount": 5, "mode": "permanent"}`, runner.StatusFailed)
	require.Equal(t, 1, step(r, "pay").Attempts)
	require.Equal(t, "card declined", r.Error.Message)
}

// TestCustomKindNames checks that a custom kind cannot take the name of a built-in kind or
// of a step's own key, nor come without a handler: they share one table with the built-ins.
func TestCustomKindNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ok := runner.StepHandlerFunc(func(context.Context, *runner.StepContext) (any, error) { return nil, nil })
	for _, name := range []string{"set", "http", "workflow", "fail", "id", "if", "retry", "timeout"} {
		_, err := runner.New(h.store, h.flows, nil, &runner.Config{Kinds: map[string]runner.StepHandler{name: ok}})
		require.Error(t, err, name)
	}
	_, err := runner.New(h.store, h.flows, nil, &runner.Config{Kinds: map[string]runner.StepHandler{"charge": nil}})
	require.Error(t, err)
	_, err = runner.New(h.store, h.flows, nil, &runner.Config{Kinds: map[string]runner.StepHandler{"charge": ok}})
	require.NoError(t, err)
}

func TestWatchSeesEveryStep(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: watched
input: {type: object}
steps:
  - {id: a, set: 1}
  - {id: wait, hook: {token: "watch:${{ run.id }}"}}
  - {id: b, set: 2}
`)
	r := h.run(e, name, `{}`, runner.StatusWaiting)
	updates, stop := e.Watch(r.ID)
	defer stop()
	first := <-updates
	require.Equal(t, runner.StatusWaiting, first.Status)
	_, err := e.Resume(context.Background(), "", "watch:"+r.ID, json.RawMessage(`{"ok": true}`))
	require.NoError(t, err)
	var last *runner.Run
	for u := range updates {
		last = u
	}
	require.Equal(t, runner.StatusCompleted, last.Status)
	require.JSONEq(t, `{"ok": true}`, string(step(last, "wait").Output))
}

// TestWatchSeesAskMisses: an answer counted by MissAsk changes no step, yet reaches the
// watchers of the run (the MCP task of a hook whose question is withdrawn changes), and a
// resume afterwards still finishes it.
func TestWatchSeesAskMisses(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: asked
input: {type: object}
steps:
  - {id: a, set: 1}
  - {id: wait, hook: {token: "ask:${{ run.id }}"}}
`)
	r := h.run(e, name, `{}`, runner.StatusWaiting)
	updates, stop := e.Watch(r.ID)
	defer stop()
	require.Equal(t, runner.AskMisses{}, (<-updates).AskMisses)
	for want := 1; want <= 2; want++ {
		n, err := e.MissAsk(context.Background(), r.ID, 1)
		require.NoError(t, err)
		require.Equal(t, want, n)
		require.Equal(t, runner.AskMisses{Step: 1, N: want}, (<-updates).AskMisses, "miss %d watched", want)
	}
	_, err := e.Resume(context.Background(), "", "ask:"+r.ID, json.RawMessage(`{"ok": true}`))
	require.NoError(t, err)
	var last *runner.Run
	for u := range updates {
		last = u
	}
	require.Equal(t, runner.StatusCompleted, last.Status)
	_, err = e.MissAsk(context.Background(), r.ID, 1)
	require.ErrorIs(t, err, runner.ErrFinished)
}

func TestWaitReturnsAtMax(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	block := runner.StepHandlerFunc(func(ctx context.Context, _ *runner.StepContext) (any, error) {
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	e := h.engine(runner.Config{Kinds: map[string]runner.StepHandler{"block": block}})
	name := h.define(`
name: slow
input: {type: object}
steps: [{id: s, block: {}}]
`)
	r := h.submit(e, name, `{}`)
	got, err := e.Wait(context.Background(), r.ID, 20*time.Millisecond)
	require.NoError(t, err)
	require.False(t, got.Status.Terminal())
	close(release)
	got, err = e.Wait(context.Background(), r.ID, time.Minute)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, got.Status)
	require.JSONEq(t, `"released"`, string(got.Output))
}
