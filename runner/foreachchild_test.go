package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// childProbe is the custom kind "probe" of the child workflow: it counts, through the store,
// the child runs started and not ended while it runs, keeps the most it saw, and fails
// when its params ask.
type childProbe struct {
	store runner.Store
	mu    sync.Mutex
	most  int
	calls map[string]int // by child run
}

func (p *childProbe) Run(ctx context.Context, sc *runner.StepContext) (any, error) {
	active := 0
	for _, st := range []runner.Status{runner.StatusPending, runner.StatusRunning, runner.StatusWaiting} {
		runs, _, err := p.store.ListRuns(ctx, runner.ListRunsParams{Trigger: runner.TriggerChild, Status: st, Limit: 100})
		if err != nil {
			return nil, err
		}
		active += len(runs)
	}
	p.mu.Lock()
	p.most, p.calls[sc.RunID] = max(p.most, active), p.calls[sc.RunID]+1
	p.mu.Unlock()
	if params, _ := sc.Params.(map[string]any); params["fail"] == true {
		return nil, errors.New("this item fails")
	}
	return nil, nil
}

// childRuns are the child runs in the store, of every status.
func childRuns(t *testing.T, s runner.Store) []*runner.Run {
	var all []*runner.Run
	for cursor := ""; ; {
		runs, next, err := s.ListRuns(context.Background(), runner.ListRunsParams{Trigger: runner.TriggerChild, Limit: 500, Cursor: cursor})
		require.NoError(t, err)
		all = append(all, runs...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

// defineFanOut publishes the child workflow "double" (probe, then 2n) and a parent that
// runs it once per item of input.ns, concurrency at a time.
func defineFanOut(h *harness, concurrency int) string {
	h.define(`
name: double
input: { type: object }
steps:
  - { id: probe, probe: { fail: "${{ input.n == 3 }}" } }
  - { id: out, set: "${{ input.n * 2 }}" }
`)
	return h.define(fmt.Sprintf(`
name: fan
input: { type: object }
steps:
  - id: fan-out
    foreach:
      items: "${{ input.ns }}"
      concurrency: %d
      workflow: { name: double, input: { n: "${{ item }}" } }
`, concurrency))
}

// items is the JSON input {"ns": [from, from+1, ..., from+n-1]}.
func items(from, n int) string {
	ns := make([]string, n)
	for k := range ns {
		ns[k] = fmt.Sprint(from + k)
	}
	return `{"ns": [` + strings.Join(ns, ",") + `]}`
}

func TestForeachWorkflowRunsAChildPerItem(t *testing.T) {
	cases := []struct {
		name        string
		concurrency int
		input       string
		status      runner.Status
		output      string // the foreach record's
		code        string
		at          string // the failed step's path
		children    int
	}{
		{name: "in order, one at a time", concurrency: 1, input: items(4, 5), status: runner.StatusCompleted, output: `[8,10,12,14,16]`, children: 5},
		{name: "in order, three at a time", concurrency: 3, input: items(4, 8), status: runner.StatusCompleted, output: `[8,10,12,14,16,18,20,22]`, children: 8},
		{name: "a failed child fails its iteration", concurrency: 1, input: items(1, 5), status: runner.StatusFailed, code: runner.CodeChildFailed, at: "fan-out/2", children: 3},
		{name: "no items", concurrency: 2, input: `{"ns": []}`, status: runner.StatusCompleted, output: `[]`},
		{name: "items not an array", concurrency: 2, input: `{"ns": 3}`, status: runner.StatusFailed, code: runner.CodeInvalidItems, at: "fan-out"},
		{name: "one past MaxChildIterations", concurrency: 2, input: items(10, schemas.MaxChildIterations+1), status: runner.StatusFailed, code: runner.CodeTooManyItems, at: "fan-out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storeBackends(t, func(t *testing.T, h *harness, s runner.Store, cfg runner.Config) {
				probe := &childProbe{store: s, calls: map[string]int{}}
				cfg.Kinds = map[string]runner.StepHandler{"probe": probe}
				e := h.engine(cfg, s)
				name := defineFanOut(h, tc.concurrency)
				r := h.run(e, name, tc.input, tc.status)
				if tc.code != "" {
					require.Equal(t, tc.code, r.Error.Code, r.Error.Message)
					require.Equal(t, tc.at, r.Error.Step)
				} else {
					require.JSONEq(t, tc.output, string(record(r, "fan-out").Output))
				}
				children := childRuns(t, s)
				require.Len(t, children, tc.children)
				for _, c := range children {
					require.Equal(t, r.ID, c.ParentRunID)
					require.Equal(t, 1, probe.calls[c.ID], "child %s ran once", c.ID)
				}
				require.LessOrEqual(t, probe.most, max(tc.concurrency, 1), "never more children active than concurrency")
			})
		})
	}
}

func TestForeachWorkflowSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	count := &counter{calls: map[string]int{}}
	kinds := map[string]runner.StepHandler{"count": count}
	h.define(`
name: held
input: { type: object }
steps:
  - { id: count, count: {} }
  - { id: nap, if: "${{ input.n >= 2 && input.n <= 3 }}", sleep: { duration: 1h } }
  - { id: out, set: "${{ input.n * 2 }}" }
`)
	name := h.define(`
name: fan
input: { type: object }
steps:
  - id: fan-out
    foreach:
      items: "${{ input.ns }}"
      concurrency: 2
      workflow: { name: held, input: { n: "${{ item }}" } }
`)
	first := h.engine(runner.Config{Kinds: kinds})
	r := h.submit(first, name, items(0, 6))
	require.Eventually(t, func() bool {
		waiting := 0
		for _, c := range childRuns(t, h.store) {
			if c.Status == runner.StatusWaiting {
				waiting++
			}
		}
		return waiting == 2
	}, 10*time.Second, time.Millisecond, "children 0 and 1 end, 2 and 3 start and sleep")
	require.NoError(t, first.Stop(context.Background()))
	stopped, err := h.store.GetRun(context.Background(), r.ID)
	require.NoError(t, err)
	require.False(t, stopped.Status.Terminal())
	require.Len(t, childRuns(t, h.store), 4, "no child starts past concurrency")

	h.clock.Advance(2 * time.Hour)
	second := h.engine(runner.Config{Kinds: kinds}, h.open())
	r = h.await(second, r.ID, runner.StatusCompleted)
	require.JSONEq(t, `[0,2,4,6,8,10]`, string(record(r, "fan-out").Output))
	children := childRuns(t, h.store)
	require.Len(t, children, 6, "the restarted parent starts no child again")
	for _, c := range children {
		require.Equal(t, runner.StatusCompleted, c.Status)
	}
	keys, calls := count.total()
	require.Equal(t, 6, keys)
	require.Equal(t, 6, calls, "no child's step ran twice")
}

func TestForeachWorkflowSpreadsOverTwoEngines(t *testing.T) {
	h := newHarness(t)
	h.define(`
name: double
input: { type: object }
steps:
  - { id: count, count: {} }
  - { id: out, set: "${{ input.n * 2 }}" }
`)
	name := h.define(`
name: fan
input: { type: object }
steps:
  - id: fan-out
    foreach:
      items: "${{ input.ns }}"
      concurrency: 50
      workflow: { name: double, input: { n: "${{ item }}" } }
`)
	if testing.Short() {
		t.Skip("2,000 child runs take a minute or two under -race on a busy machine")
	}
	const n = 2000
	counts := []*counter{{calls: map[string]int{}}, {calls: map[string]int{}}}
	engines := []*runner.Engine{
		h.engine(runner.Config{Owner: "one", Kinds: map[string]runner.StepHandler{"count": counts[0]}}),
		h.engine(runner.Config{Owner: "two", Kinds: map[string]runner.StepHandler{"count": counts[1]}}, h.open()),
	}
	r := h.submit(engines[0], name, items(0, n))
	require.Eventually(t, func() bool {
		got, err := h.store.GetRun(context.Background(), r.ID)
		require.NoError(t, err)
		return got.Status.Terminal()
	}, 5*time.Minute, 10*time.Millisecond)
	r, err := h.store.GetRun(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, r.Status, "%+v", r.Error)
	want := make([]int, n)
	for k := range want {
		want[k] = 2 * k
	}
	raw, _ := json.Marshal(want)
	require.JSONEq(t, string(raw), string(r.Output), "the run's output is the foreach's")
	children := childRuns(t, h.store)
	require.Len(t, children, n)
	for _, c := range children {
		require.Equal(t, runner.StatusCompleted, c.Status)
	}
	keys0, calls0 := counts[0].total()
	keys1, calls1 := counts[1].total()
	require.Equal(t, n, keys0+keys1, "every child's step ran")
	require.Equal(t, n, calls0+calls1, "and once, on one engine")
	require.NotZero(t, calls0, "both engines worked children")
	require.NotZero(t, calls1, "both engines worked children")
}

func TestForeachWorkflowFailureCancelsWaitingChildren(t *testing.T) {
	storeBackends(t, func(t *testing.T, h *harness, s runner.Store, cfg runner.Config) {
		cfg.Kinds = map[string]runner.StepHandler{"probe": &childProbe{store: s, calls: map[string]int{}}}
		e := h.engine(cfg, s)
		h.define(`
name: double
input: { type: object }
steps:
  - { id: nap, if: "${{ input.n != 3 }}", sleep: { duration: 1h } }
  - { id: probe, probe: { fail: "${{ input.n == 3 }}" } }
`)
		name := h.define(`
name: fan
input: { type: object }
steps:
  - id: fan-out
    foreach:
      items: "${{ input.ns }}"
      concurrency: 3
      workflow: { name: double, input: { n: "${{ item }}" } }
`)
		r := h.run(e, name, items(1, 5), runner.StatusFailed)
		require.Equal(t, runner.CodeChildFailed, r.Error.Code)
		require.Equal(t, "fan-out/2", r.Error.Step)
		for _, path := range []string{"fan-out/0", "fan-out/1"} {
			require.Equal(t, runner.StepCancelled, record(r, path).Status, path)
		}
		require.Nil(t, record(r, "fan-out/3"), "no iteration starts after one failed")
		require.Eventually(t, func() bool {
			children := childRuns(t, s)
			ended := 0
			for _, c := range children {
				if c.Status.Terminal() {
					ended++
				}
			}
			return len(children) == 3 && ended == 3
		}, 10*time.Second, 5*time.Millisecond, "the waiting children are cancelled with the iteration")
	})
}
