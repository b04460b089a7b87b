package scheduler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/testclock"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/scheduler"
	"github.com/gorunner/gorunner/store/redisstore"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// start is the test clock's start, half a second past a tick of @every 1s.
var start = time.Date(2026, 3, 28, 12, 0, 0, 500_000_000, time.UTC)

// backend is a store every service of a process runs over.
type backend interface {
	catalog.Store
	runner.Store
	idempotency.Store
}

// process is one GoRunner process's services over a shared store, on the test's clock.
type process struct {
	catalog *catalog.Service
	engine  *runner.Engine
	keys    *idempotency.Service
	clock   *testclock.Clock
	sched   *scheduler.Scheduler
}

func newProcess(t *testing.T, st backend, transport events.Transport, clock *testclock.Clock) *process {
	t.Helper()
	ctx := context.Background()
	bus := events.New(transport, nil)
	require.NoError(t, bus.Start(ctx))
	t.Cleanup(func() { _ = bus.Stop(context.Background()) })
	cat, err := catalog.New(st, &catalog.Config{SecretKey: bytes.Repeat([]byte{9}, 32), Now: clock.Now})
	require.NoError(t, err)
	keys, err := idempotency.New(st, &idempotency.Config{Events: bus})
	require.NoError(t, err)
	eng, err := runner.New(st, cat, cat, &runner.Config{Now: clock.Now, Events: bus})
	require.NoError(t, err)
	require.NoError(t, eng.Start(ctx))
	t.Cleanup(func() { _ = eng.Stop(context.Background()) })
	p := &process{catalog: cat, engine: eng, keys: keys, clock: clock}
	p.restart()
	return p
}

// restart gives the process a new scheduler, as a process starting again has.
func (p *process) restart() {
	p.sched = scheduler.New(p.catalog, p.engine, p.keys, &scheduler.Config{Now: p.clock.Now, Interval: 5 * time.Millisecond})
}

// sqliteProcesses are n processes sharing one SQLite file.
func sqliteProcesses(t *testing.T, n int) []*process {
	path := filepath.Join(t.TempDir(), "gorunner.db")
	clock := testclock.New(start)
	out := make([]*process, n)
	for i := range out {
		st, err := sqlitestore.Open(context.Background(), path)
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		out[i] = newProcess(t, st, st.Events(), clock)
	}
	return out
}

// redisProcesses are n processes sharing one Redis under a fresh prefix.
func redisProcesses(t *testing.T, n int) []*process {
	first, url, prefix := redistest.Open(t)
	clock := testclock.New(start)
	out := make([]*process, n)
	for i := range out {
		st := first
		if i > 0 {
			var err error
			st, err = redisstore.Open(context.Background(), url, &redisstore.Config{Prefix: prefix})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
		}
		out[i] = newProcess(t, st, st.Events(), clock)
	}
	return out
}

// publish creates and publishes a workflow with the schedules given.
func publish(t *testing.T, p *process, name string, schedules ...map[string]any) *catalog.Workflow {
	t.Helper()
	def := map[string]any{
		"name":      name,
		"input":     map[string]any{"type": "object", "properties": map[string]any{"report": map[string]any{"type": "string"}}},
		"steps":     []any{map[string]any{"id": "s", "set": "${{ input }}"}},
		"schedules": schedules,
	}
	raw, err := json.Marshal(def)
	require.NoError(t, err)
	ctx := context.Background()
	wf, err := p.catalog.Create(ctx, raw)
	require.NoError(t, err)
	_, _, err = p.catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	return wf
}

// passAll has every process look at the clock at once.
func passAll(t *testing.T, procs []*process) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.sched.Pass(context.Background()) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

// ticks counts the schedule runs of workflow wf by tick.
func ticks(t *testing.T, p *process, wf string) map[time.Time]int {
	t.Helper()
	runs, _, err := p.engine.List(context.Background(), runner.ListRunsParams{WorkflowID: wf, Trigger: runner.TriggerSchedule, Limit: 1000})
	require.NoError(t, err)
	out := map[time.Time]int{}
	for _, r := range runs {
		require.Equal(t, runner.TriggerSchedule, r.Trigger.Type)
		require.Equal(t, 0, r.Trigger.Schedule)
		out[r.Trigger.At]++
	}
	return out
}

// everySecond is the ticks of @every 1s in (from, to].
func everySecond(from, to time.Time) map[time.Time]int {
	out := map[time.Time]int{}
	for t := from.Truncate(time.Second).Add(time.Second); !t.After(to); t = t.Add(time.Second) {
		out[t] = 1
	}
	return out
}

// TestOneRunPerTick: processes sharing a store, all looking at the clock at each tick of
// @every 1s for 20 simulated seconds, start one run per tick, none missing, none twice.
func TestOneRunPerTick(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		procs func(t *testing.T, n int) []*process
		n     int
	}{
		{"two processes on SQLite", sqliteProcesses, 2},
		{"three processes on Redis", redisProcesses, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			procs := tc.procs(t, tc.n)
			wf := publish(t, procs[0], "every-second", map[string]any{"cron": "@every 1s", "input": map[string]any{"report": "r"}})
			clock := procs[0].clock
			for range 20 {
				clock.Advance(time.Second)
				passAll(t, procs)
			}
			require.Equal(t, everySecond(start, clock.Now()), ticks(t, procs[0], wf.ID))
			require.Len(t, ticks(t, procs[0], wf.ID), 20)
			runs, _, err := procs[0].engine.List(context.Background(), runner.ListRunsParams{WorkflowID: wf.ID, Limit: 1})
			require.NoError(t, err)
			require.JSONEq(t, `{"report":"r"}`, string(runs[0].Input))
		})
	}
}

// TestRestartCatchUp: a process starting again after a pause starts the latest tick it
// missed once (catchUp latest), or none (catchUp none), then follows the clock.
func TestRestartCatchUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		catchUp string
		missed  int // runs of the ticks missed during the pause
	}{
		{"latest", 1},
		{"none", 0},
	} {
		t.Run(tc.catchUp, func(t *testing.T) {
			t.Parallel()
			procs := sqliteProcesses(t, 2)
			wf := publish(t, procs[0], "catch-up", map[string]any{"cron": "@every 1s", "catchUp": tc.catchUp})
			clock := procs[0].clock
			clock.Advance(3 * time.Second)
			passAll(t, procs)
			before := ticks(t, procs[0], wf.ID)
			require.Len(t, before, tc.missed, "a process's first look: the latest tick since the publish, or none")

			clock.Advance(10 * time.Second) // no process ran
			for _, p := range procs {
				p.restart()
			}
			passAll(t, procs)
			passAll(t, procs) // a second look at the same time starts nothing more
			after := ticks(t, procs[0], wf.ID)
			require.Len(t, after, len(before)+tc.missed)
			if tc.missed == 1 {
				require.Equal(t, 1, after[clock.Now().Truncate(time.Second)], "the latest missed tick, once")
			}
			clock.Advance(time.Second)
			passAll(t, procs)
			require.Len(t, ticks(t, procs[0], wf.ID), len(after)+1, "then each tick")
		})
	}
}
