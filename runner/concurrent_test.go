package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// barrier is a local HTTP server whose answers (the request's body) wait until want requests
// are in flight at once: a run whose steps were not concurrent would never get them. A
// request to /hang waits for its client to go away; one to /fail is answered 400 once a
// /hang request is in flight.
type barrier struct {
	mu      sync.Mutex
	want    int
	arrived int
	open    chan struct{}
	hanging chan struct{} // closed when a /hang request came
	hung    chan struct{} // closed when its client went away
	srv     *httptest.Server
}

func newBarrier(t *testing.T, want int) *barrier {
	g := &barrier{want: want, open: make(chan struct{}), hanging: make(chan struct{}), hung: make(chan struct{})}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/fail":
			select {
			case <-g.hanging:
			case <-time.After(10 * time.Second): // not concurrent: the test fails on its records
			}
			w.WriteHeader(http.StatusBadRequest)
			return
		case "/hang":
			close(g.hanging)
			<-r.Context().Done()
			close(g.hung)
			return
		}
		g.mu.Lock()
		if g.arrived++; g.arrived == g.want {
			close(g.open)
		}
		g.mu.Unlock()
		select {
		case <-g.open:
		case <-time.After(10 * time.Second): // not concurrent: the test fails on its output
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func TestFlowForeachRunsIterationsAtOnce(t *testing.T) {
	backends(t, func(t *testing.T, h *harness, e *runner.Engine) {
		g := newBarrier(t, 5)
		name := h.define(fmt.Sprintf(`
name: five-at-once
input: { type: object }
steps:
  - id: each
    foreach:
      items: "${{ input.items }}"
      concurrency: 5
      steps:
        - { id: call, http: { method: POST, url: "%s/x", body: { n: "${{ item }}" } }, retry: { maxAttempts: 1 } }
        - { id: n, set: "${{ steps.call.output.body.n }}" }
`, g.srv.URL))
		items := make([]int, 10)
		for i := range items {
			items[i] = i
		}
		in, err := json.Marshal(map[string]any{"items": items})
		require.NoError(t, err)
		r := h.run(e, name, string(in), runner.StatusCompleted)
		require.JSONEq(t, `[0,1,2,3,4,5,6,7,8,9]`, string(r.Output), "the output is in item order")
		keys := map[string]bool{}
		for k := range items {
			rec := record(r, fmt.Sprintf("each/%d/call", k))
			require.Equal(t, runner.StepCompleted, rec.Status)
			keys[rec.StepID] = true
		}
		require.Len(t, keys, len(items))
		done, total, ok := runner.Progress(r, 0)
		require.True(t, ok)
		require.Equal(t, []int{10, 10}, []int{done, total})
	})
}

func TestFlowParallelBranchesRunAtOnce(t *testing.T) {
	backends(t, func(t *testing.T, h *harness, e *runner.Engine) {
		g := newBarrier(t, 3)
		var branches []string
		for _, id := range []string{"fedex", "ups", "dhl"} {
			branches = append(branches, fmt.Sprintf(`{ id: %s, steps: [{ id: ask, http: { method: POST, url: "%s/q", body: { c: %s } } }, { id: price, set: "${{ steps.ask.output.body.c }}" }] }`, id, g.srv.URL, id))
		}
		name := h.define(`
name: quotes
input: { type: object }
steps:
  - id: quotes
    parallel:
      branches: [` + strings.Join(branches, ", ") + `]
`)
		r := h.run(e, name, `{}`, runner.StatusCompleted)
		require.JSONEq(t, `{"fedex":"fedex","ups":"ups","dhl":"dhl"}`, string(r.Output))
	})
}

func TestFlowFailFastCancelsTheOtherBranches(t *testing.T) {
	backends(t, func(t *testing.T, h *harness, e *runner.Engine) {
		g := newBarrier(t, 100)
		name := h.define(fmt.Sprintf(`
name: fail-fast
input: { type: object }
steps:
  - id: p
    parallel:
      branches:
        - { id: slow, steps: [{ id: wait, http: { url: "%[1]s/hang" } }] }
        - { id: bad, steps: [{ id: no, http: { url: "%[1]s/fail" } }] }
`, g.srv.URL))
		r := h.run(e, name, `{}`, runner.StatusFailed)
		require.Equal(t, runner.CodeHTTP, r.Error.Code)
		require.Equal(t, "p/bad/no", r.Error.Step)
		require.Equal(t, runner.StepCancelled, record(r, "p/slow/wait").Status)
		<-g.hung
	})
}

func TestFlowWaitInABranchWaitsAlone(t *testing.T) {
	backends(t, func(t *testing.T, h *harness, e *runner.Engine) {
		log := newRequestLog(t)
		name := h.define(fmt.Sprintf(`
name: wait-alone
input: { type: object }
steps:
  - id: p
    parallel:
      branches:
        - { id: nap, steps: [{ id: sleep, sleep: { duration: 1h } }, { id: after, set: woke }] }
        - { id: hook, steps: [{ id: ok, hook: { token: "wait-alone:${{ run.id }}" } }] }
        - { id: work, steps: [{ id: call, http: { method: POST, url: "%s/work", body: { n: 1 } } }, { id: n, set: "${{ steps.call.output.body.n }}" }] }
`, log.srv.URL))
		r := h.run(e, name, `{}`, runner.StatusWaiting)
		require.Equal(t, runner.StepCompleted, record(r, "p/work/n").Status, "the branch that does not wait goes on")
		require.Equal(t, runner.StepWaiting, record(r, "p/nap/sleep").Status)
		require.Equal(t, runner.StepWaiting, record(r, "p/hook/ok").Status)
		require.NotNil(t, r.WaitingOn)

		_, err := e.Resume(context.Background(), runner.EnvProduction, "wait-alone:"+r.ID, json.RawMessage(`{"go":true}`))
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			got, err := e.Get(context.Background(), r.ID)
			require.NoError(t, err)
			return record(got, "p/hook/ok").Status == runner.StepCompleted && got.Status == runner.StatusWaiting
		}, 10*time.Second, 5*time.Millisecond, "the payload ends the hook while the sleep still waits")

		h.clock.Advance(2 * time.Hour)
		r = h.await(e, r.ID, runner.StatusCompleted)
		require.JSONEq(t, `{"nap":"woke","hook":{"go":true},"work":1}`, string(r.Output))
		require.Len(t, log.requests(), 1, "the completed http step did not run again")
	})
}

func TestFlowAStepThatEndsTheRunStopsTheOtherBranches(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	g := newBarrier(t, 100)
	owner := h.run(e, h.define(`
name: owner
input: { type: object }
steps: [{ id: hold, hook: { token: shared } }]
`), `{}`, runner.StatusWaiting)
	name := h.define(fmt.Sprintf(`
name: duplicate
input: { type: object }
steps:
  - id: p
    parallel:
      branches:
        - { id: slow, steps: [{ id: wait, http: { url: "%s/hang" } }] }
        - { id: claim, steps: [{ id: take, if: "${{ true }}", hook: { token: shared, onConflict: reject } }] }
`, g.srv.URL))
	r := h.run(e, name, `{}`, runner.StatusCompleted)
	require.JSONEq(t, fmt.Sprintf(`{"status":"duplicate","runId":%q}`, owner.ID), string(r.Output))
	require.Contains(t, []runner.StepStatus{runner.StepCancelled, runner.StepSkipped}, record(r, "p/slow/wait").Status,
		"the other branch was stopped in flight, or before it began")
}
