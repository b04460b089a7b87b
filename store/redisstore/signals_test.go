package redisstore_test

import (
	"context"
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
func twoProcesses(t *testing.T) (*redisstore.Store, *redisstore.Store) {
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
	runnertest.RunCrossProcess(t, func(t *testing.T) (runnertest.Process, runnertest.Process) {
		a, b := twoProcesses(t)
		return runnertest.Process{Store: a, Events: a.Events()}, runnertest.Process{Store: b, Events: b.Events()}
	})
}

func TestIdempotencyCrossProcess(t *testing.T) {
	t.Parallel()
	idemtest.RunCrossProcess(t, func(t *testing.T) (idemtest.Process, idemtest.Process) {
		a, b := twoProcesses(t)
		return idemtest.Process{Store: a, Events: a.Events()}, idemtest.Process{Store: b, Events: b.Events()}
	})
}
