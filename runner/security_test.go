package runner_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// TestSecurityExpressionLimit runs issue #10's attack through the real engine: the step
// fails with EXPRESSION_LIMIT naming the step and the expression, the process allocates
// tens of MB at most instead of dying in strings.Repeat, and the engine keeps serving
// another run. Not parallel: it reads the process's allocation counters.
func TestSecurityExpressionLimit(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	attack := h.define(`
name: attack
input: {type: object}
steps:
  - id: boom
    set: "${{ len(repeat(repeat('a', 1000000), input.n)) }}"
  - {id: never, set: 1}
`)
	fine := h.define(`
name: fine
input: {type: object}
steps:
  - id: greet
    set: "hello ${{ input.who }}"
`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	attackRun := h.submit(e, attack, `{"n": 1000000}`)
	fineRun := h.submit(e, fine, `{"who": "world"}`)
	r := h.await(e, attackRun.ID, runner.StatusFailed)
	runtime.ReadMemStats(&after)

	require.Equal(t, runner.CodeExpressionLimit, r.Error.Code)
	require.Equal(t, "boom", r.Error.Step)
	require.Contains(t, r.Error.Message, `step "boom"`)
	require.Contains(t, r.Error.Message, "repeat(repeat('a', 1000000), input.n)")
	require.Equal(t, runner.StepSkipped, step(r, "never").Status)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20))

	ok := h.await(e, fineRun.ID, runner.StatusCompleted)
	require.Equal(t, "hello world", jsonOf(t, ok.Output))
	again := h.run(e, fine, `{"who": "again"}`, runner.StatusCompleted)
	require.Equal(t, "hello again", jsonOf(t, again.Output))
}

// TestSecurityComputedDurations: an until computed at run time beyond MaxDuration fails the
// step with INVALID_DURATION (issue #10 item 4) instead of storing a wake-up time that
// overflows; an until in the past ends the sleep at once.
func TestSecurityComputedDurations(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: sleeper
input: {type: object}
steps:
  - id: nap
    sleep: {until: "${{ input.until }}"}
`)
	for _, until := range []string{"9999-12-31T23:59:59Z", "2300-01-01T00:00:00Z"} {
		r := h.run(e, name, `{"until": "`+until+`"}`, runner.StatusFailed)
		require.Equal(t, runner.CodeInvalidDuration, r.Error.Code)
		require.Equal(t, "nap", r.Error.Step)
		require.Contains(t, r.Error.Message, "10 years")
	}
	h.run(e, name, `{"until": "0001-01-01T00:00:00Z"}`, runner.StatusCompleted)
}

// TestSecurityRetryAfterBounded: a server asking to be retried in 3,000 years gets at most
// schemas.MaxDuration; the stored wake-up time does not overflow and the run still cancels.
func TestSecurityRetryAfterBounded(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "99999999999")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	r := h.submit(e, httpWorkflow(h, "later", srv.URL, ""), `{}`)
	var stored *runner.Run
	require.Eventually(t, func() bool {
		var err error
		stored, err = h.store.GetRun(context.Background(), r.ID)
		require.NoError(t, err)
		return len(stored.Steps) > 0 && stored.Steps[0].Attempts == 1 && !stored.WakeAt.IsZero() && stored.WakeAt.After(time.Now().Add(time.Hour))
	}, 10*time.Second, time.Millisecond)
	require.False(t, stored.WakeAt.After(time.Now().Add(schemas.MaxDuration)))
	cancelled, err := e.Cancel(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, cancelled.Status)
}

// vanishingStore makes the worker of a hanging step vanish as far as the store can tell:
// while the step hangs, its lease is not renewed and the heartbeat is told the lease is
// lost, as when the process froze, was killed or ran out of memory; the lease then runs out
// and the run is claimed again.
type vanishingStore struct {
	runner.Store
	mu      sync.Mutex
	hanging map[string]bool
}

func (s *vanishingStore) RenewLeases(ctx context.Context, p runner.RenewLeasesParams) (lost, cancelled []string, err error) {
	s.mu.Lock()
	var keep []runner.Lease
	for _, l := range p.Leases {
		if s.hanging[l.RunID()] {
			lost = append(lost, l.RunID())
		} else {
			keep = append(keep, l)
		}
	}
	s.mu.Unlock()
	p.Leases = keep
	l, c, err := s.Store.RenewLeases(ctx, p)
	return append(lost, l...), c, err
}

func (s *vanishingStore) hang(id string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hanging[id] = on
}

// TestSecurityVanishingWorkerAbandonsRun is the attack of a step that takes down every
// worker that runs it: the first MaxVanishedWorkers workers vanish holding the run, the
// next one fails it with RUN_ABANDONED without running the step again. Fewer vanished
// workers than that (a SIGKILL, a crash) and the run resumes and completes.
func TestSecurityVanishingWorkerAbandonsRun(t *testing.T) {
	tests := []struct {
		vanish    int
		wantCalls int
		want      runner.Status
	}{
		{vanish: 1, wantCalls: 2, want: runner.StatusCompleted},
		{vanish: runner.MaxVanishedWorkers - 1, wantCalls: runner.MaxVanishedWorkers, want: runner.StatusCompleted},
		{vanish: runner.MaxVanishedWorkers, wantCalls: runner.MaxVanishedWorkers, want: runner.StatusFailed},
		{vanish: 100, wantCalls: runner.MaxVanishedWorkers, want: runner.StatusFailed},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("vanish%d", tc.vanish), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			store := &vanishingStore{Store: h.store, hanging: map[string]bool{}}
			var mu sync.Mutex
			calls := map[string]int{}
			crash := runner.StepHandlerFunc(func(ctx context.Context, sc *runner.StepContext) (any, error) {
				mu.Lock()
				calls[sc.RunID]++
				n := calls[sc.RunID]
				mu.Unlock()
				if n > tc.vanish {
					return "survived", nil
				}
				store.hang(sc.RunID, true)
				defer store.hang(sc.RunID, false)
				<-ctx.Done()
				return nil, ctx.Err()
			})
			e := h.engine(runner.Config{Kinds: map[string]runner.StepHandler{"crash": crash}, LeaseTTL: time.Second}, store)
			name := h.define(`
name: poison
input: {type: object}
steps:
  - {id: before, set: 1}
  - {id: boom, crash: {}}
  - {id: after, set: 2}
`)
			ok := h.define(`
name: fine
input: {type: object}
steps:
  - {id: a, set: 42}
`)
			r := h.submit(e, name, `{}`)
			r = awaitEnd(t, e, r.ID, tc.want)
			mu.Lock()
			require.Equal(t, tc.wantCalls, calls[r.ID], "the step ran once per worker")
			mu.Unlock()
			if tc.want == runner.StatusFailed {
				require.Equal(t, runner.CodeAbandoned, r.Error.Code)
				require.Equal(t, "boom", r.Error.Step)
				require.Contains(t, r.Error.Message, fmt.Sprintf("%d workers in a row", runner.MaxVanishedWorkers))
				require.Contains(t, r.Error.Message, `step "boom"`)
				require.Equal(t, runner.StepFailed, step(r, "boom").Status)
				require.Equal(t, runner.StepSkipped, step(r, "after").Status)
			}
			fine := awaitEnd(t, e, h.submit(e, ok, `{}`).ID, runner.StatusCompleted)
			require.JSONEq(t, `42`, string(fine.Output), "the engine keeps working")
		})
	}
}

// longWait bounds the waits of these tests: they start chains of runs and hundreds of
// runs, and SQLite (pure Go) is slow under -race on a busy machine.
const longWait = 2 * time.Minute

// awaitEnd waits until run id ends, and checks it ended with status.
func awaitEnd(t *testing.T, e *runner.Engine, id string, status runner.Status) *runner.Run {
	t.Helper()
	var r *runner.Run
	require.Eventually(t, func() bool {
		var err error
		r, err = e.Get(context.Background(), id)
		require.NoError(t, err)
		return r.Status.Terminal()
	}, longWait, 5*time.Millisecond)
	require.Equal(t, status, r.Status, "run error: %+v", r.Error)
	return r
}

// countRuns counts every run in the store.
func countRuns(t *testing.T, s runner.Store) (total int, byStatus map[runner.Status]int) {
	t.Helper()
	byStatus = map[runner.Status]int{}
	p := runner.ListRunsParams{Limit: 1000}
	for {
		runs, next, err := s.ListRuns(context.Background(), p)
		require.NoError(t, err)
		for _, r := range runs {
			byStatus[r.Status]++
		}
		total += len(runs)
		if next == "" {
			return total, byStatus
		}
		p.Cursor = next
	}
}

// TestSecuritySelfStartingWorkflowStopsAtMaxDepth is the attack of a workflow whose
// workflow step starts itself: the chain stops at DefaultMaxDepth with DEPTH_LIMIT, and no
// run appears afterwards.
func TestSecuritySelfStartingWorkflowStopsAtMaxDepth(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: forever
input: {type: object}
steps:
  - {id: again, workflow: {name: forever}}
`)
	root := h.submit(e, name, `{}`)
	root = awaitEnd(t, e, root.ID, runner.StatusFailed)
	require.Equal(t, runner.CodeChildFailed, root.Error.Code)
	require.Contains(t, root.Error.Message, runner.CodeDepthLimit)

	total, byStatus := countRuns(t, h.store)
	require.Equal(t, runner.DefaultMaxDepth+1, total, "the root and one child per level")
	require.Equal(t, total, byStatus[runner.StatusFailed])
	runs, _, err := h.store.ListRuns(context.Background(), runner.ListRunsParams{Limit: 1000})
	require.NoError(t, err)
	var deepest *runner.Run
	for _, r := range runs {
		if deepest == nil || r.Depth > deepest.Depth {
			deepest = r
		}
	}
	require.Equal(t, runner.DefaultMaxDepth, deepest.Depth)
	require.Equal(t, runner.CodeDepthLimit, deepest.Error.Code)
	require.Equal(t, "again", deepest.Error.Step)
	require.Never(t, func() bool {
		n, _ := countRuns(t, h.store)
		return n != total
	}, 300*time.Millisecond, 20*time.Millisecond, "no run starts after the chain ended")
}

// nestDoc nests n child runs of itself and waits on a hook in the innermost one.
const nestDoc = `
name: nest
input: {type: object, properties: {n: {type: integer}}, required: [n]}
steps:
  - {id: deeper, if: "${{ input.n > 0 }}", workflow: {name: nest, input: {n: "${{ input.n - 1 }}"}}}
  - {id: leaf, if: "${{ input.n == 0 }}", hook: {token: "leaf:${{ run.id }}"}}
`

// awaitChain waits until want runs exist, the innermost waiting on its hook.
func awaitChain(t *testing.T, s runner.Store, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		total, byStatus := countRuns(t, s)
		return total == want && byStatus[runner.StatusWaiting] == 1
	}, longWait, 5*time.Millisecond)
}

func TestMaxDepthOnePast(t *testing.T) {
	tests := []struct {
		maxDepth, n int
		fails       bool
	}{
		{maxDepth: 0, n: runner.DefaultMaxDepth}, // 0 is the default
		{maxDepth: 0, n: runner.DefaultMaxDepth + 1, fails: true},
		{maxDepth: 2, n: 2},
		{maxDepth: 2, n: 3, fails: true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("max%d_n%d", tc.maxDepth, tc.n), func(t *testing.T) {
			h := newHarness(t)
			e := h.engine(runner.Config{MaxDepth: tc.maxDepth})
			name := h.define(nestDoc)
			root := h.submit(e, name, fmt.Sprintf(`{"n": %d}`, tc.n))
			if !tc.fails {
				awaitChain(t, h.store, tc.n+1)
				return
			}
			root = awaitEnd(t, e, root.ID, runner.StatusFailed)
			require.Contains(t, root.Error.Message, runner.CodeDepthLimit)
			total, _ := countRuns(t, h.store)
			require.Equal(t, tc.n, total, "the run that would be too deep is never created")
		})
	}
}

// TestSecurityCancelCascades cancels the root of a chain of DefaultMaxDepth waiting
// children, worked by two engines (two workers with leases of their own, as two processes
// would be; they share one handle on the file only to keep SQLite's lock waits out of the
// test's time): every run of the chain ends cancelled and none is started.
func TestSecurityCancelCascades(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{Owner: "one"})
	h.engine(runner.Config{Owner: "two"})
	name := h.define(nestDoc)
	root := h.submit(e, name, fmt.Sprintf(`{"n": %d}`, runner.DefaultMaxDepth))
	awaitChain(t, h.store, runner.DefaultMaxDepth+1)

	// Cancel waits a bounded time for the root to end, which a loaded machine can outlast
	// while the cascade records its cancels: the end state is what must hold.
	_, err := e.Cancel(context.Background(), root.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		total, byStatus := countRuns(t, h.store)
		require.Equal(t, runner.DefaultMaxDepth+1, total, "no new run")
		return byStatus[runner.StatusCancelled] == total
	}, longWait, 5*time.Millisecond)
}

// scrape reads /metrics and returns its gorunner_ lines.
func scrape(t *testing.T, url string) []string {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "gorunner_") {
			out = append(out, line)
		}
	}
	return out
}

// TestSecurityMetricsDoNotGrowWithRuns runs 500 runs, each of a draft with step IDs of its
// own, and checks that /metrics has the same series before and after.
func TestSecurityMetricsDoNotGrowWithRuns(t *testing.T) {
	h := newHarness(t)
	reg := prometheus.NewRegistry()
	e := h.engine(runner.Config{Registerer: reg, Concurrency: 16})
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)

	batch := func(from, to int) {
		want := map[string]runner.Status{}
		for i := from; i < to; i++ {
			name := h.define(fmt.Sprintf(`
name: churn
input: {type: object}
steps:
  - {id: a%[1]d, set: %[1]d}
  - {id: b%[1]d, if: "${{ %[1]d %% 2 == 0 }}", fail: {message: even}}
`, i))
			want[h.submit(e, name, `{}`).ID] = map[bool]runner.Status{true: runner.StatusFailed, false: runner.StatusCompleted}[i%2 == 0]
		}
		for id, status := range want {
			awaitEnd(t, e, id, status)
		}
	}
	batch(0, 10)
	before := scrape(t, srv.URL)
	require.NotEmpty(t, before)
	batch(10, 510)
	after := scrape(t, srv.URL)

	series := func(lines []string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i], _, _ = strings.Cut(l, " ")
		}
		return out
	}
	require.Equal(t, series(before), series(after), "the same series after 500 more runs")
	for _, l := range after {
		require.NotContains(t, l, "a509", "no step ID in a label")
	}
	size := func(lines []string) int { return len(strings.Join(lines, "\n")) }
	require.Less(t, size(after), size(before)+len(before)*8, "only the numbers grew")
}
