// Package storetest is the conformance suite of store.Backend, which every backend
// (store/sqlitestore, store/redisstore, store/pgstore) runs: Run gathers each contract's
// own suite with the suites that span contracts (an admission that commits a run with its
// key, one checked against the catalog version, the authority a run carries), and
// RunCrossProcess gathers what two processes sharing one store must see of each other
// (events, catalog, runner, idempotency), so that each backend wires its stores once
// instead of once per concern.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/events/eventstest"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/idempotency/idemtest"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// Store is the part of a backend the cross-process suites use.
type Store interface {
	runner.Store
	idempotency.Store
	CreateWorkflow(ctx context.Context, w *catalog.Workflow) error
}

// Process is what one process sharing a store has: its store handle and its transport.
type Process struct {
	Store  Store
	Events events.Transport
}

// heardWithin bounds the wait for a notice from the other process.
const heardWithin = 10 * time.Second

// RunCrossProcess runs every cross-process suite, each on two fresh processes from open
// that share one fresh store.
func RunCrossProcess(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	t.Run("Events", func(t *testing.T) {
		t.Parallel()
		eventstest.Run(t, func(t *testing.T) (events.Transport, events.Transport) {
			a, b := open(t)
			return a.Events, b.Events
		})
	})
	t.Run("CatalogWritesAreEvents", func(t *testing.T) {
		t.Parallel()
		catalogWritesAreEvents(t, open)
	})
	t.Run("Runner", func(t *testing.T) {
		t.Parallel()
		runnertest.RunCrossProcess(t, runnerProcesses(open))
	})
	t.Run("Idempotency", func(t *testing.T) {
		t.Parallel()
		idemtest.RunCrossProcess(t, func(t *testing.T) (idemtest.Process, idemtest.Process) {
			a, b := open(t)
			return idemtest.Process{Store: a.Store, Events: a.Events}, idemtest.Process{Store: b.Store, Events: b.Events}
		})
	})
}

// catalogWritesAreEvents checks that a catalog write on one process is heard as
// events.Catalog on another, with no publish of its own.
func catalogWritesAreEvents(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	a, b := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, err := b.Events.Subscribe(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Store.CreateWorkflow(ctx, &catalog.Workflow{ID: "w1", Name: "w", Rev: 1, WebhookDigest: "wh"}))
	select {
	case m := <-in:
		require.Equal(t, events.Message{Topics: []events.Topic{events.Catalog}}, m)
	case <-time.After(heardWithin):
		t.Fatal("no catalog event")
	}
}

// BenchWaitLatency is runnertest.BenchWaitLatency over two processes from open.
func BenchWaitLatency(b *testing.B, open func(tb testing.TB) (a, b Process)) {
	runnertest.BenchWaitLatency(b, runnerProcesses(open))
}

// runnerProcesses is open as runnertest takes it.
func runnerProcesses(open func(tb testing.TB) (a, b Process)) func(tb testing.TB) (runnertest.Process, runnertest.Process) {
	return func(tb testing.TB) (runnertest.Process, runnertest.Process) {
		a, b := open(tb)
		return runnertest.Process{Store: a.Store, Events: a.Events}, runnertest.Process{Store: b.Store, Events: b.Events}
	}
}
