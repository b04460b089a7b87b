package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestWaitHoldsForASleepWithinIt: a wait holds while the run sleeps for less than the
// wait (it answers with the run after the sleep), and answers at once for a sleep that
// ends after it.
func TestWaitHoldsForASleepWithinIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	e := h.engine(runner.Config{})
	short := h.run(e, h.define("name: short\ninput: {type: object}\nsteps:\n  - {id: nap, sleep: {duration: 3s}}\n  - {id: done, set: 1}\n"), `{}`, runner.StatusWaiting)
	long := h.run(e, h.define("name: long\ninput: {type: object}\nsteps:\n  - {id: nap, sleep: {duration: 1h}}\n"), `{}`, runner.StatusWaiting)

	r, err := e.Wait(context.Background(), long.ID, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, runner.StatusWaiting, r.Status, "a sleep past the wait: answered at once")

	r, err = e.Wait(context.Background(), short.ID, 20*time.Second)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCompleted, r.Status, "the wait held for the sleep, which ends within it")
}

// TestEndWaits: EndWaits answers a wait under way at once, with the run as it stands, and
// every wait after it.
func TestEndWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	e := h.engine(runner.Config{})
	r := h.run(e, h.define("name: held\ninput: {type: object}\nsteps:\n  - {id: nap, sleep: {duration: 2s}}\n"), `{}`, runner.StatusWaiting)
	got := make(chan *runner.Run, 1)
	go func() {
		r, _ := e.Wait(context.Background(), r.ID, time.Minute)
		got <- r
	}()
	e.EndWaits()
	select {
	case r := <-got:
		require.Equal(t, runner.StatusWaiting, r.Status)
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end")
	}
	after, err := e.Wait(context.Background(), r.ID, time.Minute)
	require.NoError(t, err)
	require.Equal(t, runner.StatusWaiting, after.Status)
}
