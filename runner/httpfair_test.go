package runner_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// gate is a loopback HTTP server whose requests hang until the test opens it (or the
// request is cancelled), counting how many it holds at once.
type gate struct {
	*httptest.Server
	arrived chan struct{} // one value per request come in
	release chan struct{}
	once    sync.Once

	mu             sync.Mutex
	inFlight, most int
}

func newGate(t *testing.T) *gate {
	g := &gate{arrived: make(chan struct{}, 100), release: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(func() {
		g.open()
		g.Close()
	})
	return g
}

func (g *gate) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	g.arrived <- struct{}{}
	select {
	case <-g.release:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"ok": true}`)
}

// open lets every request held, and every later one, be answered.
func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// mostAtOnce is the most requests the gate held at once.
func (g *gate) mostAtOnce() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most
}

// awaitArrivals waits until n more requests came in.
func (g *gate) awaitArrivals(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for i := range n {
		select {
		case <-g.arrived:
		case <-deadline:
			t.Fatalf("%d of %d requests came in", i, n)
		}
	}
}

// awaitIdle waits until e holds no worker slot and has no http attempt in flight.
func awaitIdle(t *testing.T, e *runner.Engine) {
	t.Helper()
	require.Eventually(t, func() bool {
		taken, waiting, inFlight := runner.Slots(e)
		return taken == 0 && waiting == 0 && inFlight == 0
	}, 10*time.Second, time.Millisecond, "slots or http attempts left taken")
}

// quickRun admits a run of a set-only workflow with an engine not started, so that it is
// written pending and only a claim by a started engine works it.
func quickRun(h *harness) string {
	name := h.define("name: quick\ninput: {type: object}\nsteps: [{id: a, set: 1}]\n")
	return h.submit(h.newEngine(runner.Config{}), name, `{}`).ID
}

// TestHTTPWaitHoldsNoWorkerSlot: runs whose http step hangs on a slow host do not hold
// the engine's worker slots, so another workflow's run is worked meanwhile (one input
// starving a process of workers was the attack).
func TestHTTPWaitHoldsNoWorkerSlot(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{Concurrency: 2})
	g := newGate(t)
	slow := httpWorkflow(h, "slow", g.URL, "")
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = h.submit(e, slow, `{}`).ID
	}
	g.awaitArrivals(t, len(ids))
	h.await(e, quickRun(h), runner.StatusCompleted)

	g.open()
	for _, id := range ids {
		r := h.await(e, id, runner.StatusCompleted)
		require.Equal(t, 1, step(r, "call").Attempts)
	}
	awaitIdle(t, e)
}

// handedBack records the runs the engine logs as handed back for a full http bound, and
// whether any such log was above debug.
type handedBack struct {
	mu   sync.Mutex
	runs map[string]bool
	loud bool
}

func (hb *handedBack) Enabled(context.Context, slog.Level) bool { return true }
func (hb *handedBack) WithAttrs([]slog.Attr) slog.Handler       { return hb }
func (hb *handedBack) WithGroup(string) slog.Handler            { return hb }

func (hb *handedBack) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "http attempts in flight at their bound; run handed back" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "run" {
			hb.mu.Lock()
			hb.runs[a.Value.String()] = true
			hb.loud = hb.loud || rec.Level != slog.LevelDebug
			hb.mu.Unlock()
		}
		return true
	})
	return nil
}

func (hb *handedBack) seen() (runs int, loud bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return len(hb.runs), hb.loud
}

// TestHTTPPerWorkflowBound: at most HTTPPerWorkflow requests of one workflow's runs are in
// flight at once; the runs over it are handed back (logged at debug) without their
// attempt counted, and all complete once the host answers, each with one attempt.
func TestHTTPPerWorkflowBound(t *testing.T) {
	h := newHarness(t)
	hb := &handedBack{runs: map[string]bool{}}
	e := h.engine(runner.Config{HTTPPerWorkflow: 2, Logger: slog.New(hb)})
	g := newGate(t)
	slow := httpWorkflow(h, "slow", g.URL, "")
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = h.submit(e, slow, `{}`).ID
	}
	g.awaitArrivals(t, 2)
	require.Eventually(t, func() bool {
		runs, _ := hb.seen()
		return runs >= len(ids)-2
	}, 10*time.Second, time.Millisecond, "the runs over the bound are handed back")
	h.await(e, quickRun(h), runner.StatusCompleted)
	require.Equal(t, 2, g.mostAtOnce())

	g.open()
	for _, id := range ids {
		r := h.await(e, id, runner.StatusCompleted)
		require.Equal(t, 1, step(r, "call").Attempts, "a handed-back attempt is not counted")
	}
	require.Equal(t, 2, g.mostAtOnce())
	_, loud := hb.seen()
	require.False(t, loud, "a full bound is logged at debug")
	awaitIdle(t, e)
}

// TestCancelHTTPWithoutSlot: cancelling a run whose request hangs ends it at once, whether
// it waits on the host or, answered, for a worker slot to go on; the slot and the http
// attempt it counted are given back, so a later run gets both.
func TestCancelHTTPWithoutSlot(t *testing.T) {
	h := newHarness(t)
	blocked, unblock := make(chan struct{}, 1), make(chan struct{})
	block := runner.StepHandlerFunc(func(ctx context.Context, _ *runner.StepContext) (any, error) {
		blocked <- struct{}{}
		select {
		case <-unblock:
			return 1, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	e := h.engine(runner.Config{Concurrency: 1, HTTPConcurrency: 1, Kinds: map[string]runner.StepHandler{"block": block}})
	g := newGate(t)
	slow := httpWorkflow(h, "slow", g.URL, "")
	busy := h.define("name: busy\ninput: {type: object}\nsteps: [{id: work, block: {}}]\n")
	ctx := context.Background()

	waitingOnHost := h.submit(e, slow, `{}`)
	g.awaitArrivals(t, 1)
	got, err := e.Cancel(ctx, waitingOnHost.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, got.Status)
	require.Equal(t, runner.StepCancelled, step(got, "call").Status)
	awaitIdle(t, e)

	waitingForSlot := h.submit(e, slow, `{}`)
	g.awaitArrivals(t, 1)
	holder := h.submit(e, busy, `{}`)
	<-blocked
	g.open() // the answer comes while the one slot is the busy run's
	require.Eventually(t, func() bool {
		_, waiting, _ := runner.Slots(e)
		return waiting == 1
	}, 10*time.Second, time.Millisecond, "the answered run waits for a slot")
	got, err = e.Cancel(ctx, waitingForSlot.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, got.Status)
	close(unblock)
	h.await(e, holder.ID, runner.StatusCompleted)
	awaitIdle(t, e)

	r := h.run(e, slow, `{}`, runner.StatusCompleted)
	require.Equal(t, 1, step(r, "call").Attempts)
	awaitIdle(t, e)
}
