package runnertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
)

// keyed is a pending run created at base+created, due then, under concurrency key with limit.
func keyed(id string, created time.Duration, key string, limit int) *runner.Run {
	r := NewRun(id, created, created)
	r.Concurrency = &runner.Concurrency{Key: key, Limit: limit}
	return r
}

// admitKeyed creates r as Create does and reports whether it was queued.
func admitKeyed(t *testing.T, s runner.Store, r *runner.Run) bool {
	t.Helper()
	res, err := s.CreateRun(context.Background(), runner.CreateRunParams{Run: r})
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome)
	return res.Queued
}

// requireQueued checks that run id waits queued and is not due.
func requireQueued(t *testing.T, s runner.Store, id string) *runner.Run {
	t.Helper()
	r := Get(t, s, id)
	require.Equal(t, runner.StatusQueued, r.Status, id)
	require.True(t, r.WakeAt.IsZero(), "a queued run is not due: %s", id)
	require.Nil(t, r.StartedAt, id)
	return r
}

// testQueueAdmission: a key's runs past its limit are admitted queued, kept with their key;
// other keys, other environments and runs without a limit are not counted; queued runs are
// not claimed; QueuePlace names the slots' holders and counts the older queued runs.
func testQueueAdmission(t *testing.T, s runner.Store) {
	ctx := context.Background()
	require.False(t, admitKeyed(t, s, keyed("a1", 0, "acme", 2)))
	require.False(t, admitKeyed(t, s, keyed("a2", time.Second, "acme", 2)))
	require.True(t, admitKeyed(t, s, keyed("a3", 2*time.Second, "acme", 2)))
	require.True(t, admitKeyed(t, s, keyed("a4", 3*time.Second, "acme", 2)))
	require.False(t, admitKeyed(t, s, keyed("b1", 4*time.Second, "globex", 2)), "another key")
	test := keyed("t1", 5*time.Second, "acme", 2)
	test.Environment = runner.EnvTest
	require.False(t, admitKeyed(t, s, test), "another environment")
	require.False(t, admitKeyed(t, s, NewRun("free", 6*time.Second, 6*time.Second)), "no limit")
	require.False(t, admitKeyed(t, s, keyed("n1", 7*time.Second, "", 1)), "the default key")

	a4 := requireQueued(t, s, "a4")
	require.Equal(t, &runner.Concurrency{Key: "acme", Limit: 2}, a4.Concurrency)
	require.Equal(t, &runner.Concurrency{Key: "", Limit: 1}, Get(t, s, "n1").Concurrency)
	require.Nil(t, Get(t, s, "free").Concurrency)
	place, err := s.QueuePlace(ctx, a4)
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2"}, place.Active)
	require.Equal(t, 1, place.Ahead)
	place, err = s.QueuePlace(ctx, Get(t, s, "a3"))
	require.NoError(t, err)
	require.Zero(t, place.Ahead)

	require.ElementsMatch(t, []string{"a1", "a2", "b1", "t1", "free", "n1"}, Claim(t, s, "A", time.Hour, 20))
	require.Empty(t, Claim(t, s, "B", time.Hour+30*time.Second, 20), "queued runs are never claimed")
	listed, _, err := s.ListRuns(ctx, runner.ListRunsParams{Status: runner.StatusQueued})
	require.NoError(t, err)
	require.Equal(t, []string{"a4", "a3"}, ids(listed))
}

// testQueuePromotion: the save that ends an active run of a key makes the oldest queued run
// of the key pending, due and started at the end's time, in that write; a run of another
// key ending promotes nothing; a cancelled queued run is claimed, leaves the queue and frees
// nothing.
func testQueuePromotion(t *testing.T, s runner.Store) {
	ctx := context.Background()
	for i, id := range []string{"k1", "k2", "k3", "k4"} {
		admitKeyed(t, s, keyed(id, time.Duration(i)*time.Second, "acme", 1))
	}
	admitKeyed(t, s, keyed("other", 10*time.Second, "globex", 1))
	c := claimed(t, s, "A", time.Minute, 5)
	require.Len(t, c, 2)
	leases := map[string]runner.Claimed{c[0].Run.ID: c[0], c[1].Run.ID: c[1]}

	other := leases["other"]
	require.NoError(t, s.SaveRun(ctx, other.Lease, Ended(other.Run, runner.StatusCompleted, 2*time.Minute), runner.SaveOptions{}))
	requireQueued(t, s, "k2")

	k1 := leases["k1"]
	require.NoError(t, s.SaveRun(ctx, k1.Lease, Ended(k1.Run, runner.StatusFailed, 3*time.Minute), runner.SaveOptions{}))
	k2 := Get(t, s, "k2")
	require.Equal(t, runner.StatusPending, k2.Status)
	requireTime(t, base.Add(3*time.Minute), k2.WakeAt)
	requireTimePtr(t, ptr(base.Add(3*time.Minute)), k2.StartedAt)
	requireQueued(t, s, "k3")

	_, err := s.RequestCancel(ctx, "k3", base.Add(4*time.Minute))
	require.NoError(t, err)
	got := claimed(t, s, "B", 4*time.Minute, 5)
	require.ElementsMatch(t, []string{"k2", "k3"}, []string{got[0].Run.ID, got[1].Run.ID})
	for _, g := range got {
		if g.Run.ID == "k3" {
			require.True(t, g.Run.CancelRequested)
			require.NoError(t, s.SaveRun(ctx, g.Lease, Ended(g.Run, runner.StatusCancelled, 5*time.Minute), runner.SaveOptions{}))
		}
	}
	require.Equal(t, runner.StatusCancelled, Get(t, s, "k3").Status)
	requireQueued(t, s, "k4") // k2 still holds the one slot
	place, err := s.QueuePlace(ctx, Get(t, s, "k4"))
	require.NoError(t, err)
	require.Equal(t, []string{"k2"}, place.Active)
	require.Zero(t, place.Ahead, "a cancelled run is out of the queue")
}

// testQueueRace: admissions of one key at once never exceed its limit, whatever writes first.
func testQueueRace(t *testing.T, s runner.Store) {
	const n, limit = 12, 3
	var wg sync.WaitGroup
	queued := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			res, err := s.CreateRun(context.Background(), runner.CreateRunParams{Run: keyed(fmt.Sprintf("r%02d", i), time.Duration(i), "acme", limit)})
			queued[i], errs[i] = res.Queued, err
		})
	}
	wg.Wait()
	started := 0
	for i := range n {
		require.NoError(t, errs[i])
		if !queued[i] {
			started++
		}
	}
	require.Equal(t, limit, started)
}
