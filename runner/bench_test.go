package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// BenchmarkEngine measures runs/s of a 3-step set workflow from Submit to completed, beside
// a baseline measured in the same run: one bare durable run insert into the same store,
// the least work any accepted run costs.
func BenchmarkEngine(b *testing.B) {
	b.Run("baseline_store_insert", func(b *testing.B) {
		h := newHarness(b)
		ctx := context.Background()
		start := time.Now()
		for i := 0; b.Loop(); i++ {
			r := &runner.Run{ID: uuid.Must(uuid.NewV7()).String(), WorkflowID: "w", Workflow: "bench", Environment: runner.EnvProduction,
				Status: runner.StatusPending, Input: json.RawMessage(`{"n": 1}`), CreatedAt: time.Now()}
			require.NoError(b, runnertest.Create(ctx, h.store, r, nil))
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	})
	b.Run("3step_set", func(b *testing.B) { benchmark3StepSet(b, 0, 1) })
	b.Run("3step_set_change_log_alone", func(b *testing.B) { benchmark3StepSet(b, 1, 1) })
	b.Run("3step_set_change_log_2_processes", func(b *testing.B) { benchmark3StepSet(b, 2, 1) })
	b.Run("3step_set_change_log_alone_c8", func(b *testing.B) { benchmark3StepSet(b, 1, 8) })
	b.Run("3step_set_engine_only", benchmarkEngineOnly)
}

// bench3Step is the benchmarks' workflow: three set steps, each reading the one before.
const bench3Step = `
name: bench
input: {type: object}
steps:
  - {id: a, set: {n: "${{ input.n }}"}}
  - {id: b, set: "${{ steps.a.output.n + 1 }}"}
  - {id: c, set: {done: "${{ steps.b.output }}"}}
`

// endsUnwritten is a store that writes nothing for a run admitted ended: what a run of
// steps without effects costs is then the engine's own work, with no store's.
type endsUnwritten struct{ runner.Store }

func (s endsUnwritten) CreateRun(ctx context.Context, p runner.CreateRunParams) (runner.CreateRunResult, error) {
	if p.Run.Status.Terminal() {
		return runner.CreateRunResult{ClaimResult: idempotency.ClaimResult{Outcome: idempotency.Claimed}}, nil
	}
	return s.Store.CreateRun(ctx, p)
}

// benchmarkEngineOnly is 3step_set on endsUnwritten, one submitter: the engine's CPU per run
// (Prepare, the steps, the expressions, the ended run kept), without the store's.
func benchmarkEngineOnly(b *testing.B) {
	h := newHarness(b)
	e := h.engine(runner.Config{}, endsUnwritten{h.store})
	name := h.define(bench3Step)
	runnertest.BenchRuns(b, e, name, 1)
}

// benchmark3StepSet runs the 3-step workflow, submitted from submitters goroutines. With
// processes > 0 the engine's bus is on the SQLite change log, as gorunner serve's is; with 2
// another handle on the file listens, as a second process would, so this one writes its
// events to the log.
func benchmark3StepSet(b *testing.B, processes, submitters int) {
	h := newHarness(b)
	var transport events.Transport
	if processes > 0 {
		transport = h.store.Events()
	}
	if processes > 1 {
		ctx, stop := context.WithCancel(context.Background())
		b.Cleanup(stop)
		_, err := h.open().Events().Subscribe(ctx)
		require.NoError(b, err)
	}
	bus := events.New(transport, nil)
	require.NoError(b, bus.Start(context.Background()))
	b.Cleanup(func() { require.NoError(b, bus.Stop(context.Background())) })
	e := h.engine(runner.Config{Events: bus})
	name := h.define(bench3Step)
	runnertest.BenchRuns(b, e, name, submitters)
}

// BenchmarkForeach compares a foreach of 1,000 set iterations with its baseline, the same
// 1,000 set steps written one after the other, each from Submit to completed (issue #29:
// at most 2×). Each run's records are committed at its end (MaxUncommittedSteps apart).
func BenchmarkForeach(b *testing.B) {
	const n = 1000
	steps := make([]string, n)
	items := make([]string, n)
	for i := range steps {
		steps[i] = fmt.Sprintf("  - {id: s%d, set: {n: %d}}", i, i)
		items[i] = strconv.Itoa(i)
	}
	b.Run("baseline_1000_set_steps", func(b *testing.B) {
		h := newHarness(b)
		e := h.engine(runner.Config{})
		runnertest.BenchRuns(b, e, h.define("name: seq\ninput: {type: object}\nsteps:\n"+strings.Join(steps, "\n")), 1)
	})
	b.Run("foreach_1000_set_iterations", func(b *testing.B) {
		h := newHarness(b)
		e := h.engine(runner.Config{})
		runnertest.BenchRuns(b, e, h.define(`
name: each
input: {type: object}
steps:
  - {id: each, foreach: {items: [`+strings.Join(items, ",")+`], steps: [{id: s, set: {n: "${{ item }}"}}]}}
`), 1)
	})
}

// BenchmarkForeachHTTP compares a foreach of 1,000 http steps at concurrency 16 (the
// default per-workflow http bound) with its baseline, a plain Go client making the same
// 1,000 requests 16 at a time, to a local server that answers after 20 ms (issue #29: at
// most 1.5×).
func BenchmarkForeachHTTP(b *testing.B) {
	const n, at = 1000, 16
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // the remote service's latency
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	b.Cleanup(srv.Close)
	b.Run("baseline_go_client", func(b *testing.B) {
		for b.Loop() {
			sem := make(chan struct{}, at)
			var wg sync.WaitGroup
			for range n {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
					}
				}()
			}
			wg.Wait()
		}
	})
	b.Run("foreach_1000_http_c16", func(b *testing.B) {
		h := newHarness(b)
		e := h.engine(runner.Config{})
		items := make([]string, n)
		for i := range items {
			items[i] = strconv.Itoa(i)
		}
		runnertest.BenchRuns(b, e, h.define(fmt.Sprintf(`
name: each-http
input: {type: object}
steps:
  - {id: each, foreach: {items: [%s], concurrency: %d, steps: [{id: call, http: {method: POST, url: %q, body: {n: "${{ item }}"}}}]}}
`, strings.Join(items, ","), at, srv.URL)), 1)
	})
}

// BenchmarkForeachChildren measures child runs/s of a foreach of 10,000 items with a
// workflow (one child run of one set step per item, 100 at once) from Submit to the
// parent's end, beside a baseline measured in the same run: 10,000 bare durable run
// inserts into the same store, the least work any child run costs (issue #29: at least
// 2,000 child runs/s on SQLite).
func BenchmarkForeachChildren(b *testing.B) {
	const n = 10_000
	b.Run("baseline_10000_store_inserts", func(b *testing.B) {
		h := newHarness(b)
		ctx := context.Background()
		start := time.Now()
		for b.Loop() {
			for range n {
				r := &runner.Run{ID: uuid.Must(uuid.NewV7()).String(), WorkflowID: "w", Workflow: "bench", Environment: runner.EnvProduction,
					Status: runner.StatusPending, Input: json.RawMessage(`{"n": 1}`), CreatedAt: time.Now()}
				require.NoError(b, runnertest.Create(ctx, h.store, r, nil))
			}
		}
		b.ReportMetric(float64(b.N*n)/time.Since(start).Seconds(), "runs/s")
	})
	b.Run("foreach_10000_children_c100", func(b *testing.B) {
		h := newHarness(b)
		e := h.engine(runner.Config{})
		h.define("name: double\ninput: {type: object}\nsteps:\n  - {id: out, set: \"${{ input.n * 2 }}\"}\n")
		name := h.define(`
name: fan
input: { type: object }
steps:
  - {id: fan-out, foreach: {items: "${{ input.ns }}", concurrency: 100, workflow: {name: double, input: {n: "${{ item }}"}}}}
`)
		ctx, input := context.Background(), json.RawMessage(items(0, n))
		start := time.Now()
		for b.Loop() {
			res, err := e.Submit(ctx, runner.SubmitParams{Workflow: name, Input: input})
			require.NoError(b, err)
			for r := res.Written; !r.Status.Terminal(); {
				r, err = e.Wait(ctx, res.Run.ID, time.Minute)
				require.NoError(b, err)
			}
		}
		b.ReportMetric(float64(b.N*n)/time.Since(start).Seconds(), "child-runs/s")
	})
}
