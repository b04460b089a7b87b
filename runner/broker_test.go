package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// flakyReads is a store whose next run reads fail, or all of them when always.
type flakyReads struct {
	runner.Store
	failures atomic.Int64 // reads left to fail
	always   bool
}

var errFlaky = errors.New("store hiccup")

func (f *flakyReads) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	if f.always || f.failures.Add(-1) >= 0 {
		return nil, errFlaky
	}
	return f.Store.GetRun(ctx, id)
}

// TestWaitSurvivesATransientReadError checks that a failed read of the run its waiters
// share is retried before they see it: one hiccup fails none of them, and only a store
// that keeps failing does.
func TestWaitSurvivesATransientReadError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		flaky   *flakyReads
		wantErr bool
	}{
		{"one failed read", &flakyReads{}, false},
		{"a failing store", &flakyReads{always: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			name := h.define("name: one\ninput: {type: object}\nsteps:\n  - {id: a, set: 1}\n")
			e := h.engine(runner.Config{})
			r := h.run(e, name, `{}`, runner.StatusCompleted)
			tt.flaky.Store = h.store
			tt.flaky.failures.Store(1)
			waiter := h.newEngine(runner.Config{}, tt.flaky)
			var wg sync.WaitGroup
			errs := make([]error, 5)
			for i := range errs {
				wg.Go(func() { _, errs[i] = waiter.Wait(context.Background(), r.ID, time.Minute) })
			}
			wg.Wait()
			for _, err := range errs {
				if tt.wantErr {
					require.ErrorIs(t, err, errFlaky)
				} else {
					require.NoError(t, err)
				}
			}
		})
	}
}

// TestWaitersLeaveNothingBehind counts the bus's subscriptions and the goroutines while
// many waiters wait on a run and after they have all been answered.
func TestWaitersLeaveNothingBehind(t *testing.T) {
	h := newHarness(t)
	name := h.define("name: one\ninput: {type: object}\nsteps:\n  - {id: a, set: 1}\n")
	bus := events.New(nil, nil)
	e := h.newEngine(runner.Config{Events: bus}) // not started: the run stays pending
	before, idle := runtime.NumGoroutine(), bus.Stats()
	r := h.submit(e, name, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { _, _ = e.Wait(ctx, r.ID, time.Minute) })
	}
	require.Eventually(t, func() bool { return bus.Stats().Topics == idle.Topics+1 }, 10*time.Second, time.Millisecond,
		"20 waiters of one run share one subscription")
	require.Equal(t, idle.Subscriptions+1, bus.Stats().Subscriptions)
	cancel()
	wg.Wait()
	require.Eventually(t, func() bool { return bus.Stats() == idle }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, 10*time.Second, 10*time.Millisecond,
		"the run's reader ends with its last waiter (the one more is Eventually's own)")
}

// refusedAdmissions is a store whose every run write fails.
type refusedAdmissions struct{ runner.Store }

var errRefused = errors.New("refused")

func (refusedAdmissions) CreateRun(context.Context, runner.CreateRunParams) (runner.CreateRunResult, error) {
	return runner.CreateRunResult{}, errRefused
}

// TestRefusedAdmissionLeavesNoFeed: a run admitted in place up to a step with effects, so
// that its feed subscribes before the admission write (to go on here), leaves no
// subscription behind when that write fails.
func TestRefusedAdmissionLeavesNoFeed(t *testing.T) {
	h := newHarness(t)
	name := h.define("name: two\ninput: {type: object}\nsteps:\n  - {id: a, set: 1}\n  - {id: b, http: {url: \"http://127.0.0.1:1/\"}}\n")
	bus := events.New(nil, nil)
	e := h.engine(runner.Config{Events: bus}, refusedAdmissions{h.store})
	require.Eventually(t, func() bool { return bus.Stats().Subscriptions == 1 }, 10*time.Second, time.Millisecond,
		"the claim loop listens for events.Due")
	idle := bus.Stats()
	_, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: name, Input: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, errRefused)
	require.Equal(t, idle, bus.Stats(), "the refused run's feed still listens")
}

// countedReads counts the reads of runs.
type countedReads struct {
	runner.Store
	reads atomic.Int64
}

func (c *countedReads) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	c.reads.Add(1)
	return c.Store.GetRun(ctx, id)
}

// TestLocalSavesReachWaitersWithoutReads: the waiters of a run this engine works get every
// state its worker commits handed over, from the state its admission wrote on, so waiting
// out a running run costs no read, whatever the number of waiters (at most one, a waiter
// that came after the end); a waiter on another engine (another process) still reads on
// each notice and sees the same end.
func TestLocalSavesReachWaitersWithoutReads(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	t.Cleanup(srv.Close)
	name := h.define(fmt.Sprintf("name: slow\ninput: {type: object}\nsteps:\n  - {id: call, http: {url: %q}}\n  - {id: done, set: 2}\n", srv.URL))
	counted := &countedReads{Store: h.store}
	e := h.engine(runner.Config{}, counted)
	other := h.engine(runner.Config{Owner: "other"})
	r := h.submit(e, name, `{}`)
	<-arrived

	var wg sync.WaitGroup
	ends := make([]*runner.Run, 8)
	for i := range ends {
		wg.Go(func() { ends[i], _ = e.Wait(context.Background(), r.ID, time.Minute) })
	}
	var remote *runner.Run
	wg.Go(func() { remote, _ = other.Wait(context.Background(), r.ID, time.Minute) })
	close(release)
	wg.Wait()
	for _, end := range ends {
		require.NotNil(t, end)
		require.Equal(t, runner.StatusCompleted, end.Status)
		require.JSONEq(t, "2", string(end.Steps[1].Output))
	}
	require.Equal(t, runner.StatusCompleted, remote.Status)
	require.LessOrEqual(t, counted.reads.Load(), int64(1), "the states come from the worker")
}

// TestWaitersOfARunStartedHereReadNothing: a run that starts where it is admitted and goes
// on past its admission (here at an http step that answers when told) is followed from the
// state its admission wrote, then from its worker's saves: its waiters in the process read
// nothing from the store while its worker holds it.
func TestWaitersOfARunStartedHereReadNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		<-release
		fmt.Fprint(w, `{"ok": true}`)
	}))
	t.Cleanup(srv.Close)
	store := &countedReads{Store: h.store}
	e := h.engine(runner.Config{}, store)
	name := h.define("name: slow\ninput: {type: object}\nsteps:\n  - {id: a, set: 1}\n  - {id: b, http: {url: \"" + srv.URL + "\"}}\n")
	res, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: name, Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, runner.StatusRunning, res.Written.Status, "admitted at the http step's start")
	for range 4 {
		r, err := e.Wait(context.Background(), res.Run.ID, 5*time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, runner.StatusRunning, r.Status)
		require.Equal(t, runner.StepCompleted, step(r, "a").Status)
	}
	require.Zero(t, store.reads.Load(), "no waiter read the run")
	close(release)
	h.await(e, res.Run.ID, runner.StatusCompleted)
}

// TestWaitOnAnEndedRunReadsNothing: a run that ended here (in its admission) is answered by
// Wait from the ended runs the engine keeps, and by WaitFrom from the state its caller
// holds itself: no store read.
func TestWaitOnAnEndedRunReadsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	store := &countedReads{Store: h.store}
	e := h.engine(runner.Config{AdmissionWork: noAdmissionBound}, store)
	name := h.define("name: quick\ninput: {type: object}\nsteps:\n  - {id: a, set: 1}\n")
	res, err := e.Submit(context.Background(), runner.SubmitParams{Workflow: name, Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, res.Written.Status, "ended in its admission")
	r, err := e.Wait(context.Background(), res.Run.ID, time.Minute)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, r.Status)
	r, err = e.WaitFrom(context.Background(), res.Written, time.Minute)
	require.NoError(t, err)
	require.Same(t, res.Written, r)
	require.Zero(t, store.reads.Load(), "no read")
}

// dueOnRead advances clock by d at the first NextPayload: the hook a run waits on times out
// between the wait's look at its payloads and its read of the run.
type dueOnRead struct {
	runnertest.SignalledReads
	clock *clock
	d     time.Duration
	once  sync.Once
}

func (s *dueOnRead) NextPayload(ctx context.Context, runID, env, token string) (*runner.Payload, error) {
	s.once.Do(func() { s.clock.Advance(s.d) })
	return s.Store.NextPayload(ctx, runID, env, token)
}

// waitAnswer is what a wait answered.
type waitAnswer struct {
	r   *runner.Run
	err error
}

// waitFromAsync starts e.WaitFrom(ctx, r, time.Minute) and returns where it answers.
func waitFromAsync(ctx context.Context, e *runner.Engine, r *runner.Run) <-chan waitAnswer {
	answered := make(chan waitAnswer, 1)
	go func() {
		got, err := e.WaitFrom(ctx, r, time.Minute)
		answered <- waitAnswer{got, err}
	}()
	return answered
}

// TestWaitFromHookTimingOutMeanwhile: a wait that finds no payload queued for the hook a
// run waits on, and then reads the run still on that hook but with its timeout come, does
// not answer with the hook wait it is past: it goes on until a worker moves the run on.
func TestWaitFromHookTimingOutMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	r := h.waitingRun(patientDef)

	read := make(chan struct{}, 1)
	store := &dueOnRead{SignalledReads: runnertest.SignalledReads{Store: h.store, Read: read}, clock: h.clock, d: time.Hour}
	waiter := h.newEngine(runner.Config{}, store) // works no run
	answered := waitFromAsync(ctx, waiter, r)
	<-read // the wait read the run, its hook timed out: it answers now if it answers with it
	h.engine(runner.Config{})
	a := <-answered
	require.NoError(t, a.err)
	require.Equal(t, runner.StatusFailed, a.r.Status, "waiting on %+v", a.r.WaitingOn)
	require.Equal(t, runner.CodeHookTimeout, a.r.Error.Code)
}

// inboxDef waits for one payload on its run's hook "in:<run ID>" and ends with it.
const inboxDef = `
name: inbox
input: {type: object}
steps:
  - {id: wait, hook: {token: "in:${{ run.id }}"}}
  - {id: done, set: "${{ steps.wait.output }}"}
`

// TestWaitFromBeforeResumeOnASlowerClock: a wait from a state read before a resume was
// accepted, in a process whose clock is behind the resumer's (so the run's wake-up is not
// yet due there), finds the payload queued and goes on until a worker has taken it, rather
// than answer with the hook wait that payload ends.
func TestWaitFromBeforeResumeOnASlowerClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	r := h.waitingRun(inboxDef)
	_, err := h.newEngine(runner.Config{}).Resume(ctx, runner.EnvProduction, "in:"+r.ID, json.RawMessage(`{"ok": true}`))
	require.NoError(t, err)

	read := make(chan struct{}, 1)
	store := runnertest.SignalledReads{Store: h.store, Read: read}
	behind := func() time.Time { return h.clock.Now().Add(-time.Hour) }
	waiter := h.newEngine(runner.Config{Now: behind}, store) // works no run
	answered := waitFromAsync(ctx, waiter, r)
	<-read // the wait read the run, its payload still queued: it answers now if it answers with the hook
	h.engine(runner.Config{})
	a := <-answered
	require.NoError(t, a.err)
	require.Equal(t, runner.StatusCompleted, a.r.Status, "waiting on %+v", a.r.WaitingOn)
	require.JSONEq(t, `{"ok": true}`, string(a.r.Output))
}

// TestWaitOnAHookOutlastsAFailedRead: a wait on a run waiting on its hook answers the run as
// it stands when the look at the hook's queued payloads fails, as a wait answered a hook
// wait before it looked, rather than fail for one read the feed's own reads would retry.
func TestWaitOnAHookOutlastsAFailedRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(inboxDef)
	r := h.run(e, name, `{}`, runner.StatusWaiting)
	waiter := h.newEngine(runner.Config{}, failingPayloads{h.store})
	for _, wait := range []func() (*runner.Run, error){
		func() (*runner.Run, error) { return waiter.Wait(ctx, r.ID, time.Minute) },
		func() (*runner.Run, error) { return waiter.WaitFrom(ctx, r, time.Minute) },
	} {
		got, err := wait()
		require.NoError(t, err)
		require.Equal(t, runner.StatusWaiting, got.Status)
		require.Equal(t, "in:"+r.ID, got.WaitingOn.Hook)
	}
}

// failingPayloads fails every look at a hook's queued payloads.
type failingPayloads struct{ runner.Store }

func (failingPayloads) NextPayload(context.Context, string, string, string) (*runner.Payload, error) {
	return nil, errors.New("the store is unreachable")
}

// heldPayloads is a counted store whose looks at a hook's queue wait until open is closed.
type heldPayloads struct {
	*runnertest.CountedStore
	open chan struct{}
}

func (s heldPayloads) NextPayload(ctx context.Context, runID, env, token string) (*runner.Payload, error) {
	<-s.open
	return s.CountedStore.NextPayload(ctx, runID, env, token)
}

// TestWaitersOfAHookWaitShareItsReads: waits from a state of a run waiting on a hook (as
// a caller that read it holds) read it once, the read after the look at the hook's queue;
// 20 of them at once, all following the run before the first look answers, share two
// looks and reads at most (the first look may have begun before most of them), not one
// each.
func TestWaitersOfAHookWaitShareItsReads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		waiters  int
		maxReads int64
	}{
		{1, 1},
		{20, 2},
	}
	h := newHarness(t)
	r := h.waitingRun(inboxDef)
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.waiters), func(t *testing.T) {
			store := heldPayloads{&runnertest.CountedStore{Store: h.store}, make(chan struct{})}
			e := h.newEngine(runner.Config{}, store) // works no run
			waiting := make(chan struct{}, tt.waiters)
			answers := make([]waitAnswer, tt.waiters)
			var wg sync.WaitGroup
			for i := range answers {
				wg.Go(func() {
					got, err := e.WaitFrom(runnertest.Joined(context.Background(), waiting), r, time.Minute)
					answers[i] = waitAnswer{got, err}
				})
			}
			for range tt.waiters {
				<-waiting
			}
			close(store.open)
			wg.Wait()
			for _, a := range answers {
				require.NoError(t, a.err)
				require.Equal(t, runner.StatusWaiting, a.r.Status)
				require.Equal(t, "in:"+r.ID, a.r.WaitingOn.Hook)
			}
			require.NotZero(t, store.Reads.Load())
			require.LessOrEqual(t, store.Reads.Load(), tt.maxReads)
		})
	}
}
