package runnertest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// Process is what one process sharing a store has: its store handle and its transport.
type Process struct {
	Store  runner.Store
	Events events.Transport
}

// crossWait bounds a cross-process wait below the buses' first resync, so that only the
// notices, not a resync, can end it in time.
const crossWait = events.ResyncInterval * 9 / 10

// RunCrossProcess checks that engines on two processes sharing a store hear each other
// through their buses. open returns two processes sharing one fresh store.
func RunCrossProcess(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, func(testing.TB) (Process, Process))
	}{
		{"NoticesWakeWaiters", noticesWakeWaiters},
		{"NoticeAtAdmission", noticeAtAdmission},
		{"WaitOutlastsDueSleep", waitOutlastsDueSleep},
		{"WaitOutlastsResume", waitOutlastsResume},
		{"WaitersShareReads", waitersShareReads},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

// noticesWakeWaiters: a run admitted on B is claimed at once by A (whose claim loop polls
// only hourly, so only B's events.Due can wake it), and B's Wait returns when A finishes
// the run (events.Run).
func noticesWakeWaiters(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	pa, pb := open(t)
	flows := oneWorkflow(t)
	crossEngine(t, pa, flows, runner.Config{}, true)
	b, _ := crossEngine(t, pb, flows, runner.Config{}, false) // not started: it never works a run itself
	for i := range 3 {
		res, err := b.Submit(context.Background(), runner.SubmitParams{Workflow: "one", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), crossWait)
		r, err := b.Wait(ctx, res.Run.ID, time.Minute)
		cancel()
		require.NoErrorf(t, err, "run %d: B's wait ended by its deadline, not by A's notice", i)
		require.Equal(t, runner.StatusCompleted, r.Status)
	}
}

// noticeAtAdmission: a run admitted on A and going on on A's worker (held at a step that
// never ends) is ended by B as soon as it is written (cancelled, and claimed as if A's
// lease had run out), and B's notice reaches A's bus before A's admission is over. A's
// waiters, who start from the state A's admission wrote, must hear that notice: A's Wait
// returns the run as B ended it, long before any resync.
func noticeAtAdmission(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	pa, pb := open(t)
	flows := staticFlows(mustDefinition(t, "name: one\ninput: {type: object}\nsteps:\n  - {id: a, set: 1}\n  - {id: b, hold: {}}\n"))
	hold := runner.StepHandlerFunc(func(ctx context.Context, _ *runner.StepContext) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	_, busB := crossEngine(t, pb, flows, runner.Config{}, false)
	gap := &admissionGap{Store: pa.Store}
	a, busA := crossEngine(t, Process{Store: gap, Events: pa.Events}, flows, runner.Config{Kinds: map[string]runner.StepHandler{"hold": hold}}, true)
	gap.written = func(id string) {
		heard := busA.Subscribe(events.Run(id))
		defer heard.Close()
		endElsewhere(t, pb.Store, id)
		busB.Publish(events.Run(id))
		select {
		case <-heard.C:
		case <-time.After(crossWait):
			t.Fatal("A's bus never heard B's notice")
		}
	}
	res, err := a.Submit(context.Background(), runner.SubmitParams{Workflow: "one", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, runner.StatusRunning, res.Written.Status, "admitted at the held step")
	ctx, cancel := context.WithTimeout(context.Background(), crossWait)
	defer cancel()
	r, err := a.Wait(ctx, res.Run.ID, time.Minute)
	require.NoError(t, err, "A's wait ended by its deadline: B's notice at the admission was missed")
	require.Equal(t, runner.StatusCancelled, r.Status)
}

// waitOutlastsResume: a wait that follows an accepted resume does not answer with the hook
// wait that the resume's payload ends. B's wait finds the run about to move on (the resume
// woke it and queued its payload).
func waitOutlastsResume(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	waitOutlasts(t, open, `name: one
input: {type: object}
steps:
  - {id: wait, hook: {token: "resume:${{ run.id }}"}}
  - {id: done, set: "${{ steps.wait.output }}"}
`, time.Now, func(b *runner.Engine, id string) {
		_, err := b.Resume(context.Background(), runner.EnvProduction, "resume:"+id, json.RawMessage(`{"ok": true}`))
		require.NoError(t, err)
	}, `{"ok": true}`)
}

// waitOutlastsDueSleep: a run whose sleep is over is about to move on, so B's wait on it
// does not answer with the sleep.
func waitOutlastsDueSleep(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	waitOutlasts(t, open, `name: one
input: {type: object}
steps:
  - {id: nap, sleep: {duration: "1h"}}
  - {id: done, set: "woke"}
`, func() time.Time { return time.Now().Add(2 * time.Hour) }, func(*runner.Engine, string) {}, `"woke"`)
}

// waitOutlasts: A's worker leaves a run of def waiting and stops; B, which works no run and
// whose clock is now, does act on the run (act may read it) and waits on it. B's wait,
// holding the run as it waits, must answer nothing while no worker moves it on; when A works
// again (on the clock now too), B's wait answers with the run A completed, with output.
func waitOutlasts(t *testing.T, open func(tb testing.TB) (a, b Process), def string, now func() time.Time,
	act func(b *runner.Engine, id string), output string) {
	ctx := context.Background()
	pa, pb := open(t)
	flows := staticFlows(mustDefinition(t, def))
	a, _ := crossEngine(t, pa, flows, runner.Config{}, true)
	res, err := a.Submit(ctx, runner.SubmitParams{Workflow: "one", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	id := res.Run.ID
	r, err := a.Wait(ctx, id, time.Minute)
	require.NoError(t, err)
	require.Equal(t, runner.StatusWaiting, r.Status)
	require.NoError(t, a.Stop(ctx))

	read := make(chan struct{}, 1)
	b, _ := crossEngine(t, Process{Store: SignalledReads{pb.Store, read}, Events: pb.Events}, flows, runner.Config{Now: now}, false)
	act(b, id)
	select {
	case <-read: // act's own read, not the wait's
	default:
	}
	type answer struct {
		r   *runner.Run
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		r, err := b.Wait(ctx, id, time.Minute)
		answered <- answer{r, err}
	}()
	<-read // B holds the run: it answers now if it answers with the wait it is past

	crossEngine(t, pa, flows, runner.Config{Now: now}, true) // A works again and moves the run on
	got := <-answered
	require.NoError(t, got.err)
	require.Equal(t, runner.StatusCompleted, got.r.Status, "waiting on %+v", got.r.WaitingOn)
	require.JSONEq(t, output, string(got.r.Output))
}

// SignalledReads is a store that tells Read each time a run is read, once the read has
// answered, without blocking: a test that holds a run's state as read waits on Read.
type SignalledReads struct {
	runner.Store
	Read chan<- struct{}
}

// GetRun reads the run from the wrapped store, then signals Read if it has room.
func (s SignalledReads) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	r, err := s.Store.GetRun(ctx, id)
	select {
	case s.Read <- struct{}{}:
	default:
	}
	return r, err
}

// admissionGap calls written with the ID of each run its CreateRun wrote, before it returns.
type admissionGap struct {
	runner.Store
	written func(id string)
}

func (g *admissionGap) CreateRun(ctx context.Context, p runner.CreateRunParams) (runner.CreateRunResult, error) {
	res, err := g.Store.CreateRun(ctx, p)
	if err == nil && res.Outcome == idempotency.Claimed {
		g.written(p.Run.ID)
	}
	return res, err
}

// endElsewhere cancels run id through s as another process would that finds its holder's
// lease run out: it requests the cancel, claims the run an hour on and saves it cancelled.
func endElsewhere(t *testing.T, s runner.Store, id string) {
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	_, err := s.RequestCancel(ctx, id, later)
	require.NoError(t, err)
	claimed, err := s.ClaimRuns(ctx, runner.ClaimRunsParams{Owner: "b", Now: later, LeaseUntil: later.Add(time.Minute), Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	r := claimed[0].Run
	require.Equal(t, id, r.ID)
	r.Status, r.FinishedAt, r.WakeAt = runner.StatusCancelled, &later, time.Time{}
	require.NoError(t, s.SaveRun(ctx, claimed[0].Lease, r, runner.SaveOptions{}))
}

// crossEngine builds an engine on a bus started over p's transport, started when work,
// with cfg's settings but for its bus and claim poll.
func crossEngine(t testing.TB, p Process, flows runner.Workflows, cfg runner.Config, work bool) (*runner.Engine, *events.Bus) {
	t.Helper()
	bus := events.New(p.Events, nil)
	require.NoError(t, bus.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, bus.Stop(context.Background())) })
	cfg.PollInterval, cfg.Events = time.Hour, bus
	e, err := runner.New(p.Store, flows, nil, &cfg)
	require.NoError(t, err)
	if work {
		require.NoError(t, e.Start(context.Background()))
		t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	}
	return e, bus
}

// staticFlows resolves every name to one definition.
type staticFlows json.RawMessage

func (f staticFlows) Resolve(_ context.Context, name, _ string) (*runner.Target, error) {
	if name != "one" {
		return nil, fmt.Errorf("workflow %q: %w", name, runner.ErrWorkflowNotFound)
	}
	return &runner.Target{WorkflowID: "wf-one", Name: "one", Version: 1, Definition: json.RawMessage(f)}, nil
}

func oneWorkflow(t testing.TB) staticFlows {
	return staticFlows(mustDefinition(t, "name: one\ninput: {type: object}\nsteps:\n  - {id: a, set: 1}\n"))
}

// mustDefinition is the stored form of the definition in YAML.
func mustDefinition(t testing.TB, yaml string) json.RawMessage {
	def, err := schemas.Decode([]byte(yaml))
	require.NoError(t, err)
	raw, err := schemas.Marshal(def)
	require.NoError(t, err)
	return raw
}
