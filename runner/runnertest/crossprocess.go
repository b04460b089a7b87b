package runnertest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
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
// through their buses: a run admitted on B is claimed at once by A (whose claim loop
// polls only hourly, so only B's events.Due can wake it), and B's Wait returns when A
// finishes the run (events.Run). open returns two processes sharing one fresh store.
func RunCrossProcess(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	pa, pb := open(t)
	flows := oneWorkflow(t)
	crossEngine(t, pa, flows, true)
	b := crossEngine(t, pb, flows, false) // not started: it never works a run itself
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

// crossEngine builds an engine on a bus started over p's transport, started when work.
func crossEngine(t testing.TB, p Process, flows runner.Workflows, work bool) *runner.Engine {
	t.Helper()
	bus := events.New(p.Events, nil)
	require.NoError(t, bus.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, bus.Stop(context.Background())) })
	e, err := runner.New(p.Store, flows, nil, &runner.Config{PollInterval: time.Hour, Events: bus})
	require.NoError(t, err)
	if work {
		require.NoError(t, e.Start(context.Background()))
		t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	}
	return e
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
	def, err := schemas.Decode([]byte("name: one\ninput: {type: object}\nsteps:\n  - {id: a, set: 1}\n"))
	require.NoError(t, err)
	raw, err := schemas.Marshal(def)
	require.NoError(t, err)
	return staticFlows(raw)
}
