package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
	"github.com/gorunner/gorunner/store/redisstore"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
)

// process is one process's view of a shared store: its handle and its events bus.
type process struct {
	store runner.Store
	bus   *events.Bus
}

// sharedStore opens n processes on one fresh store of a backend.
type sharedStore func(t *testing.T, h *harness, n int) []process

// eventsOf starts a bus over transport, stopped when t ends.
func eventsOf(t *testing.T, transport events.Transport) *events.Bus {
	b := events.New(transport, nil)
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, b.Stop(context.Background())) })
	return b
}

// sharedStores are the backends, each shared by processes as n hosts would share it: one
// SQLite file opened n times, one Redis prefix, one PostgreSQL schema.
var sharedStores = map[string]sharedStore{
	"sqlite": func(t *testing.T, h *harness, n int) []process {
		out := []process{{h.store, eventsOf(t, h.store.Events())}}
		for len(out) < n {
			s := h.open()
			out = append(out, process{s, eventsOf(t, s.Events())})
		}
		return out
	},
	"redis": func(t *testing.T, _ *harness, n int) []process {
		first, url, prefix := redistest.Open(t)
		out := []process{{first, eventsOf(t, first.Events())}}
		for len(out) < n {
			s, err := redisstore.Open(context.Background(), url, &redisstore.Config{Prefix: prefix})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			out = append(out, process{s, eventsOf(t, s.Events())})
		}
		return out
	},
	"postgres": func(t *testing.T, _ *harness, n int) []process {
		first, schema := pgtest.Open(t)
		out := []process{{first, eventsOf(t, first.Events())}}
		for len(out) < n {
			s := pgtest.OpenIn(t, schema)
			out = append(out, process{s, eventsOf(t, s.Events())})
		}
		return out
	},
}

// holds records when each run's hold step ran, per customer: a step kind that takes a
// little while, so that overlapping runs would show.
type holds struct {
	mu     sync.Mutex
	active map[string]string // customer → the run holding it now
	starts map[string][]string
	errs   []error
}

func newHolds() *holds {
	return &holds{active: map[string]string{}, starts: map[string][]string{}}
}

func (h *holds) Run(ctx context.Context, sc *runner.StepContext) (any, error) {
	customer := fmt.Sprint(sc.Params.(map[string]any)["customer"])
	h.mu.Lock()
	if other, busy := h.active[customer]; busy {
		h.errs = append(h.errs, fmt.Errorf("customer %s: run %s started while %s was active", customer, sc.RunID, other))
	}
	h.active[customer] = sc.RunID
	h.starts[customer] = append(h.starts[customer], sc.RunID)
	h.mu.Unlock()
	select {
	case <-time.After(20 * time.Millisecond): // the step's own work
	case <-ctx.Done():
	}
	h.mu.Lock()
	delete(h.active, customer)
	h.mu.Unlock()
	return customer, ctx.Err()
}

// TestConcurrencyKeyAcrossProcesses is issue #30's case: a workflow with concurrency {key:
// input.customer, limit: 1}, 20 runs for two customers admitted across the engines of
// processes sharing a store (two on SQLite, three on Redis and PostgreSQL): never two runs
// of one customer active at once, every run completes, in admission order per customer.
func TestConcurrencyKeyAcrossProcesses(t *testing.T) {
	for name, open := range sharedStores {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			wf := h.define(`
name: per-customer
input: { type: object }
concurrency: { key: "${{ input.customer }}", limit: 1 }
steps:
  - { id: work, hold: { customer: "${{ input.customer }}" } }
`)
			n := 3
			if name == "sqlite" {
				n = 2
			}
			rec := newHolds()
			var engines []*runner.Engine
			for i, p := range open(t, h, n) {
				engines = append(engines, h.engine(runner.Config{Owner: fmt.Sprintf("p%d", i), Events: p.bus,
					Kinds: map[string]runner.StepHandler{"hold": rec}}, p.store))
			}
			want := map[string][]string{}
			var ids []string
			for i := range 20 {
				customer := []string{"acme", "globex"}[i%2]
				r := h.submit(engines[i%len(engines)], wf, `{"customer":"`+customer+`"}`)
				require.Contains(t, []runner.Status{runner.StatusPending, runner.StatusQueued}, r.Status)
				want[customer] = append(want[customer], r.ID)
				ids = append(ids, r.ID)
			}
			for i, id := range ids {
				r := h.await(engines[i%len(engines)], id, runner.StatusCompleted)
				require.NotNil(t, r.StartedAt)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.Empty(t, rec.errs)
			require.Equal(t, want, rec.starts, "each customer's runs ran one at a time, in admission order")
		})
	}
}

// TestQueuedRunShowsItsPlace: a run over the limit is admitted queued, with its ID and key;
// Place shows the run holding the slot and the runs ahead; a wait on it answers queued as
// it would running; cancelling it ends it and frees nothing; when the holder ends, the
// oldest queued run starts, with startedAt then.
func TestQueuedRunShowsItsPlace(t *testing.T) {
	h := newHarness(t)
	wf := h.define(`
name: gated
input: { type: object }
concurrency: { key: "${{ input.customer }}", limit: 1 }
steps:
  - { id: wait, hook: { token: "go-${{ run.id }}" } }
`)
	e := h.engine(runner.Config{})
	ctx := context.Background()
	first := h.run(e, wf, `{"customer":"acme"}`, runner.StatusWaiting)
	second := h.submit(e, wf, `{"customer":"acme"}`)
	third := h.submit(e, wf, `{"customer":"acme"}`)
	other := h.run(e, wf, `{"customer":"globex"}`, runner.StatusWaiting)
	require.Equal(t, runner.StatusQueued, second.Status)
	require.Equal(t, runner.StatusQueued, third.Status)

	got, err := e.Wait(ctx, third.ID, 100*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, runner.StatusQueued, got.Status, "a wait answers queued, as for running")
	placed, err := e.Place(ctx, got)
	require.NoError(t, err)
	require.Equal(t, &runner.QueuePlace{Key: "acme", Limit: 1, Active: []string{first.ID}, Ahead: 1}, placed.WaitingOn.Queue)
	placed, err = e.Place(ctx, other)
	require.NoError(t, err)
	require.Same(t, other, placed, "a run not queued is shown as it is")

	cancelled, err := e.Cancel(ctx, second.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, cancelled.Status)
	got, err = e.Get(ctx, third.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusQueued, got.Status, "cancelling a queued run frees no slot")
	placed, err = e.Place(ctx, got)
	require.NoError(t, err)
	require.Zero(t, placed.WaitingOn.Queue.Ahead)

	_, err = e.Resume(ctx, runner.EnvProduction, "go-"+first.ID, json.RawMessage(`{}`))
	require.NoError(t, err)
	h.await(e, first.ID, runner.StatusCompleted)
	started := h.await(e, third.ID, runner.StatusWaiting)
	require.NotNil(t, started.StartedAt)
	require.True(t, started.StartedAt.After(third.CreatedAt), "startedAt is when it left the queue")
}

// TestConcurrencyKeyRefused: a key that evaluates to something other than a string or a
// number, or past schemas.MaxConcurrencyKey bytes, or with a NUL, refuses the admission with
// an input problem, and nothing is written.
func TestConcurrencyKeyRefused(t *testing.T) {
	h := newHarness(t)
	wf := h.define(`
name: keyed
input: { type: object }
concurrency: { key: "${{ input.k }}", limit: 1 }
steps:
  - { id: a, set: 1 }
`)
	e := h.engine(runner.Config{})
	long := `"` + string(slices.Repeat([]byte("x"), 256)) + `"`
	for name, k := range map[string]string{"object": `{"a":1}`, "array": `[1]`, "bool": `true`, "null": `null`,
		"one past the bound": long, "nul": `"a\u0000b"`} {
		t.Run(name, func(t *testing.T) {
			_, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: wf, Input: json.RawMessage(`{"k":` + k + `}`)})
			var ie *runner.InputError
			require.True(t, errors.As(err, &ie), "%v", err)
		})
	}
	runs, _, err := e.List(context.Background(), runner.ListRunsParams{})
	require.NoError(t, err)
	require.Empty(t, runs, "nothing was admitted")
	for _, k := range []string{`7`, `"` + string(slices.Repeat([]byte("x"), 255)) + `"`} {
		h.run(e, wf, `{"k":`+k+`}`, runner.StatusCompleted)
	}
}

// dying is a process's store that dies (every call fails from then on) right after it
// writes the end of a run: nothing the process would do after that write is done. No claim
// of the process runs between that write and its death (mu).
type dying struct {
	runner.Store
	mu   sync.Mutex
	dead atomic.Bool
}

var errKilled = errors.New("the process was killed")

func (d *dying) SaveRun(ctx context.Context, l runner.Lease, r *runner.Run, o runner.SaveOptions) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead.Load() {
		return errKilled
	}
	err := d.Store.SaveRun(ctx, l, r, o)
	if err == nil && r.Status.Terminal() {
		d.dead.Store(true)
	}
	return err
}

func (d *dying) ClaimRuns(ctx context.Context, p runner.ClaimRunsParams) ([]runner.Claimed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead.Load() {
		return nil, errKilled
	}
	return d.Store.ClaimRuns(ctx, p)
}

func (d *dying) RenewLeases(ctx context.Context, p runner.RenewLeasesParams) (lost, cancelled []string, err error) {
	if d.dead.Load() {
		return nil, nil, errKilled
	}
	return d.Store.RenewLeases(ctx, p)
}

func (d *dying) ReleaseRun(ctx context.Context, l runner.Lease) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.Store.ReleaseRun(ctx, l)
}

// TestQueuePromotedWhenTheEndingProcessDies: the process that ends the active run of a key
// dies right after that write, before anything else it would do (wake its workers, tell
// others): the queued run of the key was promoted by that very write, so another process
// starts it. Nothing needs a recovery pass.
func TestQueuePromotedWhenTheEndingProcessDies(t *testing.T) {
	for name, open := range sharedStores {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			wf := h.define(`
name: gated-work
input: { type: object }
concurrency: { limit: 1 }
steps:
  - { id: work, gate: {} }
`)
			release := make(chan struct{})
			gate := runner.StepHandlerFunc(func(ctx context.Context, _ *runner.StepContext) (any, error) {
				select {
				case <-release:
					return "done", nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			})
			kinds := map[string]runner.StepHandler{"gate": gate}
			procs := open(t, h, 2)
			store := &dying{Store: procs[0].store}
			doomed := h.newEngine(runner.Config{Owner: "doomed", Kinds: kinds, Events: procs[0].bus}, store)
			require.NoError(t, doomed.Start(context.Background()))
			t.Cleanup(func() { _ = doomed.Stop(context.Background()) })

			first := h.submit(doomed, wf, `{}`)
			require.Equal(t, runner.StatusPending, first.Status)
			second := h.submit(doomed, wf, `{}`)
			require.Equal(t, runner.StatusQueued, second.Status)
			h.await(doomed, first.ID, runner.StatusRunning)
			close(release)
			require.Eventually(t, store.dead.Load, 10*time.Second, time.Millisecond, "the doomed process ended the first run, then died")

			survivor := h.engine(runner.Config{Owner: "survivor", Kinds: kinds, Events: procs[1].bus}, procs[1].store)
			h.await(survivor, first.ID, runner.StatusCompleted)
			h.await(survivor, second.ID, runner.StatusCompleted)
		})
	}
}

// TestChildRunsQueue: the child runs of a foreach with workflow, whose workflow has a
// concurrency limit, queue like any run: one at a time per key, every one completing.
func TestChildRunsQueue(t *testing.T) {
	h := newHarness(t)
	h.define(`
name: one-at-a-time
input: { type: object }
concurrency: { key: "${{ input.customer }}", limit: 1 }
steps:
  - { id: work, hold: { customer: "${{ input.customer }}" } }
`)
	fan := h.define(`
name: fan-customers
input: { type: object }
steps:
  - id: each
    foreach:
      items: "${{ input.customers }}"
      concurrency: 6
      workflow: { name: one-at-a-time, input: { customer: "${{ item }}" } }
`)
	rec := newHolds()
	e := h.engine(runner.Config{Kinds: map[string]runner.StepHandler{"hold": rec}})
	r := h.run(e, fan, `{"customers":["acme","acme","globex","acme","globex","acme"]}`, runner.StatusCompleted)
	require.JSONEq(t, `["acme","acme","globex","acme","globex","acme"]`, string(r.Output))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Empty(t, rec.errs)
	require.Len(t, rec.starts["acme"], 4)
	require.Len(t, rec.starts["globex"], 2)
}
