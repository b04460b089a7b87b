package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/store/redisstore"
)

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no signal")
		var zero T
		return zero
	}
}

// TestSignals checks that each signal reaches a subscriber on another connection, and
// that a subscription's channel closes when its context ends.
func TestSignals(t *testing.T) {
	t.Parallel()
	s := fresh(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	keys, err := s.KeyNotifier().Subscribe(ctx)
	require.NoError(t, err)
	require.NoError(t, s.KeyNotifier().Publish(ctx, "p:a", "k:1"))
	require.Equal(t, idempotency.KeyRef{Scope: "p:a", Key: "k:1"}, receive(t, keys))

	wakes, err := s.WakeSignal().Subscribe(ctx)
	require.NoError(t, err)
	require.NoError(t, s.WakeSignal().Publish(ctx))
	receive(t, wakes)

	changes, err := s.CatalogSignal(ctx)
	require.NoError(t, err)
	require.NoError(t, s.CreateWorkflow(ctx, &catalog.Workflow{ID: "w1", Name: "w", Rev: 1, WebhookToken: "wh"}))
	receive(t, changes)

	cancel()
	require.Eventually(t, func() bool {
		_, open := <-keys
		return !open
	}, 5*time.Second, 10*time.Millisecond, "the channel closes when ctx ends")
}

// TestURLPrefix checks that a prefix query parameter keeps two stores apart in one
// database.
func TestURLPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := fresh(t)
	require.NoError(t, a.CreateWorkflow(ctx, &catalog.Workflow{ID: "w1", Name: "w", Rev: 1, WebhookToken: "wh"}))
	other := "gorunner-test:" + randomHex(t) + ":"
	b, err := redisstore.Open(ctx, redisURL(t)+"?prefix="+other, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, b.Close())
		deletePrefix(t, redisURL(t), other)
	})
	_, err = b.GetWorkflow(ctx, "w")
	require.ErrorIs(t, err, catalog.ErrNotFound, "another prefix sees nothing of the first")
	require.NoError(t, b.CreateWorkflow(ctx, &catalog.Workflow{ID: "w1", Name: "w", Rev: 1, WebhookToken: "wh"}))
}
