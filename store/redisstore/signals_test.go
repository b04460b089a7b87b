package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/events/eventstest"
	"github.com/gorunner/gorunner/idempotency/idemtest"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/redisstore"
)

// twoProcesses opens two stores on one key prefix, as two processes sharing it would.
func twoProcesses(t testing.TB) (*redisstore.Store, *redisstore.Store) {
	t.Helper()
	a, url, prefix := freshAt(t)
	b, err := redisstore.Open(context.Background(), url, &redisstore.Config{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return a, b
}

func TestEvents(t *testing.T) {
	t.Parallel()
	eventstest.Run(t, func(t *testing.T) (events.Transport, events.Transport) {
		a, b := twoProcesses(t)
		return a.Events(), b.Events()
	})
}

// TestCatalogScriptsPublish checks that a catalog write on one process is heard as
// events.Catalog on another.
func TestCatalogScriptsPublish(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, err := b.Events().Subscribe(ctx)
	require.NoError(t, err)
	require.NoError(t, a.CreateWorkflow(ctx, &catalog.Workflow{ID: "w1", Name: "w", Rev: 1, WebhookToken: "wh"}))
	select {
	case m := <-in:
		require.Equal(t, []events.Topic{events.Catalog}, m.Topics)
	case <-time.After(10 * time.Second):
		t.Fatal("no catalog event")
	}
}

func TestRunnerCrossProcess(t *testing.T) {
	t.Parallel()
	runnertest.RunCrossProcess(t, twoRunnerProcesses)
}

func TestIdempotencyCrossProcess(t *testing.T) {
	t.Parallel()
	idemtest.RunCrossProcess(t, func(t *testing.T) (idemtest.Process, idemtest.Process) {
		a, b := twoProcesses(t)
		return idemtest.Process{Store: a, Events: a.Events()}, idemtest.Process{Store: b, Events: b.Events()}
	})
}

func twoRunnerProcesses(tb testing.TB) (runnertest.Process, runnertest.Process) {
	a, b := twoProcesses(tb)
	return runnertest.Process{Store: a, Events: a.Events()}, runnertest.Process{Store: b, Events: b.Events()}
}

func BenchmarkWaitCrossProcess(b *testing.B) {
	runnertest.BenchWaitLatency(b, twoRunnerProcesses)
}

// BenchmarkCatalogEventCrossProcess times, from the start of a catalog write on process A,
// the events.Catalog notice on process B's bus, which is what starts B's tool-set sync
// and list_changed: p50-ms.
func BenchmarkCatalogEventCrossProcess(b *testing.B) {
	a, other := twoProcesses(b)
	bus := events.New(other.Events(), nil)
	require.NoError(b, bus.Start(context.Background()))
	b.Cleanup(func() { require.NoError(b, bus.Stop(context.Background())) })
	sub := bus.Subscribe(events.Catalog)
	defer sub.Close()
	ctx := context.Background()
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("w%d", i)
		start := time.Now()
		require.NoError(b, a.CreateWorkflow(ctx, &catalog.Workflow{ID: id, Name: id, Rev: 1, WebhookToken: "wh" + id}))
		select {
		case <-sub.C:
			took = append(took, time.Since(start))
		case <-time.After(30 * time.Second):
			b.Fatal("no catalog event")
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
}
