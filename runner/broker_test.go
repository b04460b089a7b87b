package runner_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/runner"
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
