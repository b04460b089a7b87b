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
	"github.com/gorunner/gorunner/store/redisstore"
	"github.com/gorunner/gorunner/store/storetest"
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

// crossProcesses is twoProcesses as the cross-process suites take it.
func crossProcesses(tb testing.TB) (storetest.Process, storetest.Process) {
	a, b := twoProcesses(tb)
	return storetest.Process{Store: a, Events: a.Events()}, storetest.Process{Store: b, Events: b.Events()}
}

func TestCrossProcess(t *testing.T) {
	t.Parallel()
	storetest.RunCrossProcess(t, crossProcesses)
}

func BenchmarkWaitCrossProcess(b *testing.B) {
	storetest.BenchWaitLatency(b, crossProcesses)
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
		require.NoError(b, a.CreateWorkflow(ctx, &catalog.Workflow{ID: id, Name: id, Rev: 1, WebhookDigest: "wh" + id}))
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
