package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/syncbuf"
	"github.com/gorunner/gorunner/runner"
)

// noAdmissionBound keeps Config.AdmissionWork out of the tests that count commits or expect
// a run to end in its admission: under -race on a busy machine 10 ms of steps is not a
// fixed number of them.
const noAdmissionBound = time.Hour

// commitLog wraps the real store and writes down, for every CreateRun and SaveRun, the
// step records it wrote and the run's status: "a:completed b:running → running", after
// "admit " for the admission (the steps it holds: those not pending).
type commitLog struct {
	runner.Store
	mu      sync.Mutex
	commits []string
}

func (c *commitLog) CreateRun(ctx context.Context, p runner.CreateRunParams) (runner.CreateRunResult, error) {
	var steps []int
	for i, rec := range p.Run.Steps {
		if rec.Status != runner.StepPending {
			steps = append(steps, i)
		}
	}
	c.add("admit " + describeCommit(p.Run, steps))
	return c.Store.CreateRun(ctx, p)
}

func (c *commitLog) SaveRun(ctx context.Context, lease runner.Lease, r *runner.Run, opts runner.SaveOptions) error {
	c.add(describeCommit(r, opts.Steps))
	return c.Store.SaveRun(ctx, lease, r, opts)
}

func (c *commitLog) add(commit string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commits = append(c.commits, commit)
}

func (c *commitLog) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.commits...)
}

func describeCommit(r *runner.Run, steps []int) string {
	var parts []string
	for _, i := range steps {
		parts = append(parts, r.Steps[i].ID+":"+string(r.Steps[i].Status))
	}
	return strings.Join(parts, " ") + " → " + string(r.Status)
}

// TestCheckpoints counts the commits of runs started where they are admitted: steps without
// effects (set, fail, skipped steps) are committed together with the next durable point,
// the first of which is the admission itself, and a step with effects is committed before
// it reaches out and again when it is done.
func TestCheckpoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps string
		want  runner.Status
		// commits are the SaveRun calls, in order.
		commits []string
		// beforeRequest are the commits made when the http step's request arrives.
		beforeRequest []string
	}{
		{
			name:    "five sets: the admission writes the finished run",
			steps:   `[{id: a, set: 1}, {id: b, set: 2}, {id: c, set: 3}, {id: d, set: 4}, {id: e, set: "${{ steps.d.output }}"}]`,
			want:    runner.StatusCompleted,
			commits: []string{"admit a:completed b:completed c:completed d:completed e:completed → completed"},
		},
		{
			name:  "set, set, http, set: the sets and the http step's start are the admission",
			steps: `[{id: a, set: 1}, {id: b, set: 2}, {id: c, http: {url: "%s"}}, {id: d, set: 4}]`,
			want:  runner.StatusCompleted,
			commits: []string{
				"admit a:completed b:completed c:running → running",
				"c:completed → running",
				"d:completed → completed",
			},
			beforeRequest: []string{"admit a:completed b:completed c:running → running"},
		},
		{
			name:    "a skipped http step has no effects",
			steps:   `[{id: a, set: 1}, {id: b, if: "${{ false }}", http: {url: "%s"}}, {id: c, set: 3}]`,
			want:    runner.StatusCompleted,
			commits: []string{"admit a:completed b:skipped c:completed → completed"},
		},
		{
			name:    "fail commits the sets before it",
			steps:   `[{id: a, set: 1}, {id: b, fail: {message: no}}, {id: c, set: 3}]`,
			want:    runner.StatusFailed,
			commits: []string{"admit a:completed b:failed c:skipped → failed"},
		},
		{
			name:    "a wait: the sets before it are the admission",
			steps:   `[{id: a, set: 1}, {id: b, set: 2}, {id: c, sleep: {duration: 1h}}, {id: d, set: 4}]`,
			want:    runner.StatusWaiting,
			commits: []string{"admit a:completed b:completed → running", "c:waiting → waiting"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			store := &commitLog{Store: h.store}
			var mu sync.Mutex
			var beforeRequest []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				beforeRequest = store.log()
				mu.Unlock()
				fmt.Fprint(w, `{}`)
			}))
			t.Cleanup(srv.Close)
			e := h.engine(runner.Config{AdmissionWork: noAdmissionBound}, store)
			name := h.define("name: checkpoints\ninput: {type: object}\nsteps: " + strings.ReplaceAll(tc.steps, "%s", srv.URL))
			h.run(e, name, `{}`, tc.want)
			require.Equal(t, tc.commits, store.log())
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, tc.beforeRequest, beforeRequest, "the sets were durable before the request went out")
		})
	}
}

// TestLongChainCommitsInBatches checks that a chain of set steps longer than
// MaxUncommittedSteps is committed every MaxUncommittedSteps steps.
func TestLongChainCommitsInBatches(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	store := &commitLog{Store: h.store}
	e := h.engine(runner.Config{AdmissionWork: noAdmissionBound}, store)
	n := 2*runner.MaxUncommittedSteps + runner.MaxUncommittedSteps/2
	steps := make([]string, n)
	for i := range steps {
		steps[i] = fmt.Sprintf("{id: s%d, set: %d}", i, i)
	}
	name := h.define("name: chain\ninput: {type: object}\nsteps: [" + strings.Join(steps, ", ") + "]")
	r := h.run(e, name, `{}`, runner.StatusCompleted)
	require.JSONEq(t, fmt.Sprint(n-1), string(r.Output))
	commits := store.log()
	require.Len(t, commits, 3)
	for i, size := range []int{runner.MaxUncommittedSteps, runner.MaxUncommittedSteps, runner.MaxUncommittedSteps / 2} {
		require.Equal(t, size, strings.Count(commits[i], ":completed"), "commit %d", i)
	}
	require.True(t, strings.HasSuffix(commits[2], "→ completed"))
}

// lostCommit stands for a process killed just before a commit: the first SaveRun of a run
// writes nothing and ends the worker as a lost lease would; it keeps the step records it was
// given, the batch that was never committed.
type lostCommit struct {
	runner.Store
	mu   sync.Mutex
	lost []runner.StepRecord
}

func (s *lostCommit) SaveRun(ctx context.Context, lease runner.Lease, r *runner.Run, opts runner.SaveOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost != nil {
		return s.Store.SaveRun(ctx, lease, r, opts)
	}
	s.lost = make([]runner.StepRecord, len(r.Steps))
	for i, rec := range r.Steps {
		s.lost[i] = *rec
	}
	return runner.ErrLeaseLost
}

// TestCrashBeforeBatchCommit kills a worker between a batch of set steps and its commit
// (the start of the custom step after them): the next worker runs the set steps again and
// the run completes with the records the lost commit held, under the same stepIds, and the
// step with effects sees the inputs it would have seen. The run is admitted pending (the
// engine is not started yet) and claimed, so that its first steps run after a claim.
func TestCrashBeforeBatchCommit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mu sync.Mutex
	var calls []map[string]any
	record := runner.StepHandlerFunc(func(_ context.Context, sc *runner.StepContext) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, sc.Params.(map[string]any))
		return sc.StepID, nil
	})
	kinds := map[string]runner.StepHandler{"record": record}
	name := h.define(`
name: batch
input: {type: object}
steps:
  - {id: a, set: {n: "${{ input.n }}", stepId: "${{ step.stepId }}", attempt: "${{ step.attempt }}", run: "${{ run.id }}"}}
  - {id: skip, if: "${{ input.n > 100 }}", set: never}
  - {id: b, set: "${{ steps.a.output.n * 2 }}"}
  - {id: c, record: {b: "${{ steps.b.output }}", a: "${{ steps.a.output.stepId }}"}}
  - {id: d, set: {c: "${{ steps.c.output }}"}}
`)
	store := &lostCommit{Store: h.store}
	const lease = time.Minute
	first := h.newEngine(runner.Config{Kinds: kinds, LeaseTTL: lease}, store)
	admitted := h.submit(first, name, `{"n": 21}`)
	require.Equal(t, runner.StatusPending, admitted.Status)
	require.NoError(t, first.Start(context.Background()))
	require.Eventually(t, func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.lost != nil
	}, longWait, time.Millisecond)
	require.NoError(t, first.Stop(context.Background()))
	stored, err := h.store.GetRun(context.Background(), admitted.ID)
	require.NoError(t, err)
	for _, rec := range stored.Steps {
		require.Equal(t, runner.StepPending, rec.Status, "nothing of the batch was committed")
	}
	mu.Lock()
	require.Empty(t, calls, "the step with effects did not run before the batch was committed")
	mu.Unlock()

	h.clock.Advance(lease + time.Second)
	second := h.engine(runner.Config{Kinds: kinds}, h.open())
	done := h.await(second, admitted.ID, runner.StatusCompleted)
	for i, want := range store.lost[:3] {
		got := done.Steps[i]
		require.Equal(t, admitted.Steps[i].StepID, got.StepID)
		require.Equal(t, want.StepID, got.StepID)
		require.Equal(t, want.Status, got.Status, want.ID)
		require.Equal(t, want.Attempts, got.Attempts, want.ID)
		require.JSONEq(t, string(orNull(want.Output)), string(orNull(got.Output)), want.ID)
	}
	require.JSONEq(t, `42`, string(step(done, "b").Output))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []map[string]any{{"b": 42.0, "a": step(done, "a").StepID}}, normalize(t, calls))
	require.JSONEq(t, fmt.Sprintf(`{"c": %q}`, step(done, "c").StepID), string(done.Output))
}

func orNull(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return json.RawMessage("null")
	}
	return raw
}

// normalize passes v through JSON, so that numbers compare as float64.
func normalize(t *testing.T, v []map[string]any) []map[string]any {
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// leaseThief wraps the real store and loses the lease at the first save of a child run's
// ID (a workflow step's checkpoint), then counts what the worker writes after that.
type leaseThief struct {
	runner.Store
	mu             sync.Mutex
	stolen         bool
	after, release int
}

func (l *leaseThief) SaveRun(ctx context.Context, lease runner.Lease, r *runner.Run, opts runner.SaveOptions) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.stolen:
		l.after++
	case r.Steps[0].State != nil:
		l.stolen = true
		return fmt.Errorf("taken over: %w", runner.ErrLeaseLost)
	}
	return l.Store.SaveRun(ctx, lease, r, opts)
}

func (l *leaseThief) ReleaseRun(ctx context.Context, lease runner.Lease) error {
	l.mu.Lock()
	if l.stolen {
		l.release++
	}
	l.mu.Unlock()
	return l.Store.ReleaseRun(ctx, lease)
}

// TestCheckpointWithLostLeaseStopsQuietly checks that a worker whose checkpoint finds its
// lease lost ends its pass at once: no internal error logged, no more saves, no release.
func TestCheckpointWithLostLeaseStopsQuietly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.define(`
name: child
input: {type: object}
steps:
  - {id: one, set: 1}
`)
	parent := h.define(`
name: parent
input: {type: object}
steps:
  - {id: call, workflow: {name: child}}
`)
	var logs syncbuf.Buffer
	thief := &leaseThief{Store: h.store}
	e := h.newEngine(runner.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, thief)
	require.NoError(t, e.Start(context.Background()))
	h.submit(e, parent, `{}`)
	require.Eventually(t, func() bool {
		thief.mu.Lock()
		defer thief.mu.Unlock()
		return thief.stolen
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, e.Stop(context.Background()))

	thief.mu.Lock()
	defer thief.mu.Unlock()
	require.Zero(t, thief.after, "no save after the lease is found lost")
	require.Zero(t, thief.release, "no release of a lost lease")
	require.NotContains(t, logs.String(), "internal error")
}

// TestAdmissionWorkIsBounded: past Config.AdmissionWork a run's admission is written with
// the steps done so far, and a worker here goes on with the rest.
func TestAdmissionWorkIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	store := &commitLog{Store: h.store}
	e := h.engine(runner.Config{AdmissionWork: time.Nanosecond}, store)
	name := h.define("name: bounded\ninput: {type: object}\nsteps: [{id: a, set: 1}, {id: b, set: 2}, {id: c, set: 3}]")
	h.run(e, name, `{}`, runner.StatusCompleted)
	require.Equal(t, []string{"admit  → running", "a:completed b:completed c:completed → completed"}, store.log())
}
