package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// counter counts executions of the custom kind "count" per stepId.
type counter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *counter) Run(_ context.Context, sc *runner.StepContext) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[sc.StepID]++
	return c.calls[sc.StepID], nil
}

func (c *counter) total() (keys, calls int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.calls {
		calls += n
	}
	return len(c.calls), calls
}

func TestSleepSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	count := &counter{calls: map[string]int{}}
	kinds := map[string]runner.StepHandler{"count": count}
	name := h.define(`
name: nap
input: {type: object}
steps:
  - {id: before, count: {}}
  - {id: nap, sleep: {duration: 1h}}
  - {id: after, count: {}}
`)
	first := h.newEngine(runner.Config{Kinds: kinds})
	require.NoError(t, first.Start(context.Background()))
	r := h.run(first, name, `{}`, runner.StatusWaiting)
	sleepUntil := *r.WaitingOn.SleepUntil
	require.WithinDuration(t, h.clock.Now().Add(time.Hour), sleepUntil, time.Minute)
	require.NoError(t, first.Stop(context.Background()))

	h.clock.Advance(30 * time.Minute)
	second := h.engine(runner.Config{Kinds: kinds}, h.open())
	got, err := second.Get(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusWaiting, got.Status, "the restart does not reset the sleep")
	require.Equal(t, sleepUntil, *got.WaitingOn.SleepUntil)

	h.clock.Advance(31 * time.Minute)
	r = h.await(second, r.ID, runner.StatusCompleted)
	keys, calls := count.total()
	require.Equal(t, 2, keys)
	require.Equal(t, 2, calls, "no completed step ran again")
	require.JSONEq(t, `1`, string(step(r, "before").Output))
}

func TestTwoEnginesShareOneQueue(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	count := &counter{calls: map[string]int{}}
	kinds := map[string]runner.StepHandler{"count": count}
	name := h.define(fmt.Sprintf(`
name: shared
input: {type: object}
steps:
  - {id: a, count: {}}
  - {id: b, http: {url: "%s"}}
  - {id: c, count: {}}
`, srv.URL))
	engines := []*runner.Engine{
		h.engine(runner.Config{Kinds: kinds, Concurrency: 4, Owner: "one"}),
		h.engine(runner.Config{Kinds: kinds, Concurrency: 4, Owner: "two"}, h.open()),
	}
	const n = 40
	ids := make([]string, n)
	for i := range n {
		ids[i] = h.submit(engines[i%2], name, `{}`).ID
	}
	for _, id := range ids {
		h.await(engines[0], id, runner.StatusCompleted)
	}
	keys, calls := count.total()
	require.Equal(t, 2*n, keys)
	require.Equal(t, 2*n, calls, "no step ran twice")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, hits, n)
	for key, c := range hits {
		require.Equal(t, 1, c, key)
	}
}

func TestCancel(t *testing.T) {
	h := newHarness(t)
	started := make(chan struct{}, 1)
	var sawCancel atomic.Bool
	block := runner.StepHandlerFunc(func(ctx context.Context, _ *runner.StepContext) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		sawCancel.Store(true)
		return nil, ctx.Err()
	})
	e := h.engine(runner.Config{Kinds: map[string]runner.StepHandler{"block": block}})
	waiting := h.define(`
name: waiting
input: {type: object}
steps:
  - {id: wait, hook: {token: "c:${{ run.id }}"}}
  - {id: after, set: 1}
`)
	busy := h.define(`
name: busy
input: {type: object}
steps:
  - {id: work, block: {}}
  - {id: after, set: 1}
`)
	r := h.run(e, waiting, `{}`, runner.StatusWaiting)
	got, err := e.Cancel(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, got.Status)
	require.Equal(t, runner.StepCancelled, step(got, "wait").Status)
	require.Equal(t, runner.StepCancelled, step(got, "after").Status)
	_, err = e.Hook(context.Background(), "", "c:"+r.ID)
	require.ErrorIs(t, err, runner.ErrNotFound, "hooks are disposed")

	r = h.submit(e, busy, `{}`)
	<-started
	got, err = e.Cancel(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, got.Status)
	require.True(t, sawCancel.Load(), "the running step's context is cancelled")

	_, err = e.Cancel(context.Background(), r.ID)
	require.ErrorIs(t, err, runner.ErrFinished)
}

// echoX is a workflow named name whose one step outputs its input's x.
func echoX(name, input string) string {
	return "name: " + name + "\ninput: " + input + "\nsteps: [{id: a, set: \"${{ input.x }}\"}]\n"
}

func TestRerun(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(echoX("again", "{type: object}"))
	first := h.run(e, name, `{"x": 1}`, runner.StatusCompleted)
	second, err := e.Rerun(ctx, first.ID, nil)
	require.NoError(t, err)
	require.Equal(t, first.ID, second.RerunOf)
	require.JSONEq(t, string(first.Input), string(second.Input))
	second = h.await(e, second.ID, runner.StatusCompleted)
	require.NotEqual(t, step(first, "a").StepID, step(second, "a").StepID)

	many, err := e.RerunMany(ctx, runner.RerunManyParams{Workflow: first.WorkflowID, Status: runner.StatusCompleted})
	require.NoError(t, err)
	require.Len(t, many, 2)
	_, err = e.RerunMany(ctx, runner.RerunManyParams{RunIDs: make([]string, runner.MaxBulkRerun+1)})
	require.ErrorIs(t, err, runner.ErrInvalidInput)
}

// TestRerunManyAllOrNothing: a bulk rerun naming a run that cannot be rerun (its input no
// longer valid for the workflow's current version, or a run that does not exist) starts
// none of the others, wherever that run stands in the list, so a retry starts no run twice.
func TestRerunManyAllOrNothing(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(echoX("strict", "{type: object}"))
	good := h.run(e, name, `{"x": 1}`, runner.StatusCompleted)
	stale := h.run(e, name, `{"x": "one"}`, runner.StatusCompleted)
	h.define(echoX("strict", "{type: object, properties: {x: {type: integer}}}"))
	count := func() int {
		total, _ := countRuns(t, h.store)
		return total
	}
	before := count()
	for _, ids := range [][]string{{good.ID, stale.ID}, {stale.ID, good.ID}, {good.ID, "0190a000-0000-7000-8000-000000000000"}} {
		_, err := e.RerunMany(ctx, runner.RerunManyParams{RunIDs: ids})
		require.Error(t, err, "%v", ids)
		require.Equal(t, before, count(), "%v: no run started", ids)
	}
	var ie *runner.InputError
	_, err := e.RerunMany(ctx, runner.RerunManyParams{RunIDs: []string{good.ID, stale.ID}})
	require.ErrorAs(t, err, &ie)
	require.ErrorContains(t, err, stale.ID)

	many, err := e.RerunMany(ctx, runner.RerunManyParams{RunIDs: []string{good.ID, good.ID}})
	require.NoError(t, err)
	require.Len(t, many, 2)
	require.Equal(t, before+2, count())
}

func TestChildWorkflow(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	h.define(`
name: child
input: {type: object, properties: {n: {type: integer}}, required: [n]}
steps:
  - {id: check, if: "${{ input.n < 0 }}", fail: {message: negative}}
  - {id: double, set: "${{ input.n * 2 }}"}
`)
	parent := h.define(`
name: parent
input: {type: object}
steps:
  - {id: call, workflow: {name: child, input: {n: "${{ input.n }}"}}}
  - {id: done, set: {child: "${{ steps.call.output }}"}}
`)
	r := h.run(e, parent, `{"n": 21}`, runner.StatusCompleted)
	require.JSONEq(t, `{"child": 42}`, string(r.Output))

	r = h.run(e, parent, `{"n": -1}`, runner.StatusFailed)
	require.Equal(t, runner.CodeChildFailed, r.Error.Code)
	require.Contains(t, r.Error.Message, "negative")

	r = h.run(e, parent, `{"n": "x"}`, runner.StatusFailed)
	require.Equal(t, runner.CodeValidation, r.Error.Code)
}

func TestRunStep(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	target := h.define(`
name: target
input: {type: object}
steps:
  - {id: wait, hook: {token: "target:${{ input.k }}"}}
`)
	actor := h.define(`
name: actor
input: {type: object}
steps:
  - {id: status, run: {action: status, runId: "${{ input.runId }}"}}
  - {id: resume, run: {action: resume, token: "target:${{ input.k }}", payload: {ok: true}}}
  - {id: result, run: {action: result, runId: "${{ input.runId }}"}}
result: {status: "${{ steps.status.output }}", result: "${{ steps.result.output }}"}
`)
	tr := h.run(e, target, `{"k": 1}`, runner.StatusWaiting)
	r := h.run(e, actor, fmt.Sprintf(`{"runId": %q, "k": 1}`, tr.ID), runner.StatusCompleted)
	require.JSONEq(t, `{"status": "waiting", "result": {"ok": true}}`, string(r.Output))

	canceller := h.define(`
name: canceller
input: {type: object}
steps: [{id: stop, run: {action: cancel, runId: "${{ input.runId }}"}}]
`)
	tr = h.run(e, target, `{"k": 2}`, runner.StatusWaiting)
	h.run(e, canceller, fmt.Sprintf(`{"runId": %q}`, tr.ID), runner.StatusCompleted)
	h.await(e, tr.ID, runner.StatusCancelled)
}

func TestStopHandsRunsOver(t *testing.T) {
	h := newHarness(t)
	entered := make(chan struct{}, 1)
	var attempts atomic.Int32
	slow := runner.StepHandlerFunc(func(ctx context.Context, sc *runner.StepContext) (any, error) {
		if attempts.Add(1) == 1 {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return sc.StepID, nil
	})
	kinds := map[string]runner.StepHandler{"slow": slow}
	name := h.define(`
name: handover
input: {type: object}
steps:
  - {id: first, set: 1}
  - {id: work, slow: {}}
`)
	first := h.newEngine(runner.Config{Kinds: kinds, LeaseTTL: time.Hour})
	require.NoError(t, first.Start(context.Background()))
	r := h.submit(first, name, `{}`)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.NoError(t, first.Stop(ctx))

	second := h.engine(runner.Config{Kinds: kinds}, h.open())
	done := h.await(second, r.ID, runner.StatusCompleted)
	require.JSONEq(t, fmt.Sprintf("%q", step(done, "work").StepID), string(done.Output))
	require.Equal(t, int32(2), attempts.Load())
	var out any
	require.NoError(t, json.Unmarshal(step(done, "first").Output, &out))
	require.Equal(t, 1.0, out)
}

// storedDefinition gives the runs it claims with definition in place of their own: nil, as
// a Redis store does once its record of their version is gone (evicted, or deleted by
// hand), or bytes that do not decode, as a store whose record was damaged does.
type storedDefinition struct {
	runner.Store
	definition json.RawMessage
}

func (s storedDefinition) ClaimRuns(ctx context.Context, p runner.ClaimRunsParams) ([]runner.Claimed, error) {
	claimed, err := s.Store.ClaimRuns(ctx, p)
	for _, c := range claimed {
		c.Run.Definition = s.definition
	}
	return claimed, err
}

// TestRunWithoutItsDefinition: the worker that claims a run it cannot work for want of a
// usable definition ends it rather than leave it to be claimed again at every lease's end
// with its tokens held. A run whose definition the store no longer has is cancelled when
// that was asked, else failed at the step it stands at with a DEFINITION_ERROR that says
// why and what to do; a run whose definition does not decode is failed at no step with a
// DEFINITION_ERROR carrying the decoding error.
func TestRunWithoutItsDefinition(t *testing.T) {
	for _, tc := range []struct {
		name       string
		definition json.RawMessage
		cancel     bool
	}{
		{name: "gone"},
		{name: "gone, cancel asked", cancel: true},
		{name: "undecodable", definition: json.RawMessage(`{"steps": [`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			h := newHarness(t)
			name := h.define(`
name: gone
input: {type: object}
steps:
  - {id: wait, hook: {token: "gone:1"}}
  - {id: done, set: 1}
`)
			first := h.engine(runner.Config{})
			r := h.run(first, name, `{}`, runner.StatusWaiting)
			require.NoError(t, first.Stop(ctx))
			e := h.engine(runner.Config{}, storedDefinition{h.store, tc.definition})
			if tc.cancel {
				got, err := e.Cancel(ctx, r.ID)
				require.NoError(t, err)
				require.Equal(t, runner.StatusCancelled, got.Status)
				require.Nil(t, got.Error)
			} else {
				_, err := e.Resume(ctx, runner.EnvProduction, "gone:1", json.RawMessage(`{}`))
				require.NoError(t, err)
				got := h.await(e, r.ID, runner.StatusFailed)
				require.Equal(t, runner.CodeDefinition, got.Error.Code)
				require.Equal(t, runner.StepSkipped, step(got, "done").Status)
				if tc.definition == nil {
					require.Equal(t, "wait", got.Error.Step)
					require.Contains(t, got.Error.Message, `its definition (version 1 of workflow "gone") is no longer in the store`)
					require.Equal(t, runner.StepFailed, step(got, "wait").Status)
				} else {
					require.Empty(t, got.Error.Step)
					require.Contains(t, got.Error.Message, "decoding definition")
				}
			}
			_, err := e.Hook(ctx, runner.EnvProduction, "gone:1")
			require.ErrorIs(t, err, runner.ErrNotFound, "the ended run's token is free")
		})
	}
}

// TestRerunManyFollowsShortPages: a rerun by workflow and status finds its run under newer
// runs of the workflow in another state through list pages that end short, even empty,
// and gives up with a validation error past MaxListExamined runs looked through.
func TestRerunManyFollowsShortPages(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	store := &runnertest.Examining{Store: h.store, N: 2}
	e := h.engine(runner.Config{}, store)
	name := h.define(echoX("sift", "{type: object}"))
	done := h.run(e, name, `{"x": 1}`, runner.StatusCompleted)
	pages := runner.MaxListExamined / limits.MaxRunsExamined
	for i := range 2 * (pages - 1) {
		r := *done
		r.ID, r.Status, r.Steps = fmt.Sprintf("failed-%02d", i), runner.StatusFailed, nil
		r.CreatedAt = done.CreatedAt.Add(time.Duration(i+1) * time.Second)
		require.NoError(t, runnertest.Create(ctx, h.store, &r, nil))
	}
	many, err := e.RerunMany(ctx, runner.RerunManyParams{Workflow: done.WorkflowID, Status: runner.StatusCompleted})
	require.NoError(t, err, "%d empty pages of 2 runs, then the page of the completed run", pages-1)
	require.Len(t, many, 1)
	require.Equal(t, done.ID, many[0].RerunOf)

	store.N = 1 // a page each: the completed run is on page 2×pages-1
	_, err = e.RerunMany(ctx, runner.RerunManyParams{Workflow: done.WorkflowID, Status: runner.StatusCompleted})
	require.ErrorIs(t, err, runner.ErrInvalidInput)
}

// TestRunStepResumeChecksTheAsk: a run step's resume is held to the ask of the hook step
// waiting on the token, as REST's is: a payload that does not fit fails the step with
// VALIDATION_ERROR and is not queued; one that fits resumes the hook.
func TestRunStepResumeChecksTheAsk(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	target := h.define(`
name: asked
input: {type: object}
steps:
  - id: wait
    hook:
      token: "asked:${{ input.k }}"
      ask: {message: "Approve?", schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}}
`)
	actor := h.define(`
name: answerer
input: {type: object}
steps:
  - {id: resume, run: {action: resume, token: "asked:${{ input.k }}", payload: "${{ input.payload }}"}}
`)
	tr := h.run(e, target, `{"k": 1}`, runner.StatusWaiting)
	r := h.run(e, actor, `{"k": 1, "payload": {"ok": "yes"}}`, runner.StatusFailed)
	require.Equal(t, runner.CodeValidation, r.Error.Code, "%+v", r.Error)
	require.Contains(t, r.Error.Message, "/ok")
	_, err := h.store.NextPayload(context.Background(), tr.ID, runner.EnvProduction, "asked:1")
	require.ErrorIs(t, err, runner.ErrNotFound, "the payload refused is not queued")

	h.run(e, actor, `{"k": 1, "payload": {"ok": true}}`, runner.StatusCompleted)
	done := h.await(e, tr.ID, runner.StatusCompleted)
	require.JSONEq(t, `{"ok": true}`, string(done.Output))
}
