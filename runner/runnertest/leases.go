package runnertest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

func testClaimDueOnly(t *testing.T, s runner.Store) {
	done := Ended(NewRun("done", 0, 0), runner.StatusCompleted, 0)
	create(t, s, NewRun("c", 0, 3*time.Second), NewRun("a", 0, time.Second), NewRun("b", 0, 2*time.Second),
		NewRun("future", 0, time.Hour), NewRun("never", 0, -1), done)

	runs := claimed(t, s, "A", 5*time.Second, 2)
	require.Len(t, runs, 2)
	require.Equal(t, []string{"a", "b"}, []string{runs[0].Run.ID, runs[1].Run.ID}, "earliest due first, at most limit")
	requireJSON(t, NewRun("a", 0, 0).Input, runs[0].Run.Input)
	requireJSON(t, NewRun("a", 0, 0).Definition, runs[0].Run.Definition)

	require.Equal(t, []string{"c"}, Claim(t, s, "B", 5*time.Second, 10), "leased runs are not claimed again")
	require.Empty(t, Claim(t, s, "C", 5*time.Second, 10))
	require.Empty(t, Claim(t, s, "C", 30*time.Second, 0), "limit 0 claims nothing")
}

func testClaimExpiredLease(t *testing.T, s runner.Store) {
	create(t, s, NewRun("r", 0, 0))
	a := claimOne(t, s, "A", time.Second, "r")
	require.Empty(t, Claim(t, s, "B", 30*time.Second, 1), "lease still held")
	b := claimOne(t, s, "B", time.Second+time.Minute+time.Millisecond, "r") // an expired lease is reclaimable

	r := b.Run
	r.Status = runner.StatusRunning
	require.ErrorIs(t, s.SaveRun(context.Background(), a.Lease, r, runner.SaveOptions{}), runner.ErrLeaseLost)
	require.NoError(t, s.SaveRun(context.Background(), b.Lease, r, runner.SaveOptions{}))
}

func testClaimRace(t *testing.T, s runner.Store) {
	const runs, owners = 30, 4
	for _, id := range runIDs("run", runs) {
		create(t, s, NewRun(id, 0, 0))
	}
	got := make([][]string, owners)
	errs := make([]error, owners)
	var wg sync.WaitGroup
	for o := range owners {
		wg.Go(func() {
			owner := string(rune('A' + o))
			for range runs { // bounded: a broken backend may hand out the same runs forever
				claimed, err := s.ClaimRuns(context.Background(),
					runner.ClaimRunsParams{Owner: owner, Now: base.Add(time.Second), LeaseUntil: base.Add(time.Hour), Limit: 2})
				if err != nil || len(claimed) == 0 {
					errs[o] = err
					return
				}
				for _, c := range claimed {
					got[o] = append(got[o], c.Run.ID)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for o := range owners {
		require.NoError(t, errs[o])
		for _, id := range got[o] {
			seen[id]++
		}
	}
	require.Len(t, seen, runs, "every due run claimed")
	for id, n := range seen {
		require.Equalf(t, 1, n, "run %s claimed by %d owners", id, n)
	}
}

func testSaveRun(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r", 0, 0))
	c := claimOne(t, s, "A", 0, "r")

	r := c.Run
	r.Status = runner.StatusWaiting
	r.StartedAt = ptr(base.Add(time.Second))
	r.WaitingOn = &runner.WaitingOn{Hook: "order:1"}
	r.Steps = []*runner.StepRecord{{ID: "s1", StepID: "r/s1", Status: runner.StepWaiting, Attempts: 1,
		State: json.RawMessage(`{"token":"order:1"}`)}}
	r.WakeAt = time.Time{}
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}))
	RequireRun(t, r, Get(t, s, "r"))

	require.NoError(t, s.ReleaseRun(ctx, c.Lease))
	require.Empty(t, Claim(t, s, "B", time.Hour, 1), "a run with no WakeAt is not due")

	r.Output = json.RawMessage(`{"n":1}`)
	require.ErrorIs(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}), runner.ErrLeaseLost, "released")
}

func testSaveLostLease(t *testing.T, s runner.Store) {
	create(t, s, NewRun("r", 0, 0))
	r := Get(t, s, "r")
	forged := runner.NewLease("r", "A")
	require.ErrorIs(t, s.SaveRun(context.Background(), forged, r, runner.SaveOptions{}), runner.ErrLeaseLost,
		"never claimed")
	require.ErrorIs(t, s.SaveRun(context.Background(), runner.Lease{}, r, runner.SaveOptions{}), runner.ErrLeaseLost,
		"no lease")
	require.Equal(t, []string{"r"}, Claim(t, s, "B", 0, 1))
	r.Status = runner.StatusFailed
	require.ErrorIs(t, s.SaveRun(context.Background(), forged, r, runner.SaveOptions{}), runner.ErrLeaseLost,
		"claimed by another")
	require.Equal(t, runner.StatusPending, Get(t, s, "r").Status, "nothing written")
}

// testSaveOtherRunsLease: a lease holds its own run only, even when its owner also holds
// the run being saved.
func testSaveOtherRunsLease(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("a", 0, 0), NewRun("b", 0, time.Second))
	runs := claimed(t, s, "A", time.Second, 2)
	require.Len(t, runs, 2)
	a, b := runs[0], runs[1]
	require.Equal(t, "b", b.Run.ID)
	want := Get(t, s, "b")

	b.Run.Status, b.Run.FinishedAt, b.Run.Output = runner.StatusCompleted, ptr(base.Add(2*time.Second)), json.RawMessage(`1`)
	b.Run.Steps = []*runner.StepRecord{{ID: "s1", StepID: "b/s1", Status: runner.StepCompleted, Attempts: 1}}
	require.ErrorIs(t, s.SaveRun(ctx, a.Lease, b.Run, runner.SaveOptions{}), runner.ErrLeaseLost)
	RequireRun(t, want, Get(t, s, "b")) // nothing written

	require.NoError(t, s.SaveRun(ctx, b.Lease, b.Run, runner.SaveOptions{}), "its own lease saves it")
	require.Equal(t, runner.StatusCompleted, Get(t, s, "b").Status)
}

func testTerminalSave(t *testing.T, s runner.Store) {
	ctx := context.Background()
	parent := NewRun("parent", 0, -1)
	parent.Status = runner.StatusWaiting
	child := NewRun("child", time.Second, 0)
	child.ParentRunID = "parent"
	create(t, s, parent, child, NewRun("other", 2*time.Second, -1))
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "tok", "child")))
	c := claimOne(t, s, "A", time.Second, "child")

	r := c.Run
	r.Status, r.FinishedAt, r.Output = runner.StatusCompleted, ptr(base.Add(10*time.Second)), json.RawMessage(`1`)
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}))

	_, err := s.GetHook(ctx, runner.EnvProduction, "tok")
	require.ErrorIs(t, err, runner.ErrNotFound, "tokens released")
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "tok", "other")), "the token is free")
	require.ErrorIs(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}), runner.ErrLeaseLost, "lease dropped")

	require.Empty(t, Claim(t, s, "B", 9*time.Second, 10), "parent due when the child ended, not before")
	require.Equal(t, []string{"parent"}, Claim(t, s, "B", 10*time.Second, 10), "parent woken")
}

func testWakeNotLostToSave(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r", 0, 0))
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "tok", "r")))
	c := claimOne(t, s, "A", time.Second, "r")
	r := c.Run

	_, err := s.EnqueuePayload(ctx, runner.EnvProduction, "tok", json.RawMessage(`{}`), base.Add(2*time.Second))
	require.NoError(t, err)
	r.Status, r.WakeAt = runner.StatusWaiting, time.Time{}
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}), "the worker has not seen the payload")
	require.NoError(t, s.ReleaseRun(ctx, c.Lease))
	require.Equal(t, []string{"r"}, Claim(t, s, "B", 3*time.Second, 1), "the wake-up survives the save")
}

func testReleaseRun(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r", 0, 0))
	c := claimOne(t, s, "A", 0, "r")
	// A forged lease of another owner must not free A's lease; whether it errs is the
	// backend's choice.
	_ = s.ReleaseRun(ctx, runner.NewLease("r", "B"))
	require.Empty(t, Claim(t, s, "B", time.Second, 1))
	require.ErrorIs(t, s.ReleaseRun(ctx, runner.Lease{}), runner.ErrLeaseLost, "no lease releases nothing")
	require.ErrorIs(t, s.ReleaseRun(ctx, runner.NewLease("r", "")), runner.ErrLeaseLost, "a lease with no owner")
	require.Empty(t, Claim(t, s, "B", time.Second, 1))
	require.NoError(t, s.ReleaseRun(ctx, c.Lease))
	require.Equal(t, []string{"r"}, Claim(t, s, "B", time.Second, 1), "released runs are claimable at once")
}

func testRenewLeases(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r1", 0, 0), NewRun("r2", 0, 0))
	held := claimed(t, s, "A", 0, 2)
	require.Len(t, held, 2)
	r1, r2 := held[0], held[1]
	require.Equal(t, []string{"r1", "r2"}, []string{r1.Run.ID, r2.Run.ID})
	// Only r2 is left due once A's leases run out: r1 is renewed first.
	renew := func(until time.Duration, leases ...runner.Lease) (lost, cancelled []string, err error) {
		return s.RenewLeases(ctx, runner.RenewLeasesParams{Leases: leases, Until: base.Add(until)})
	}
	lost, cancelled, err := renew(5*time.Minute, r1.Lease)
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Empty(t, cancelled)
	r1.Run.Status = runner.StatusRunning
	require.NoError(t, s.SaveRun(ctx, r1.Lease, r1.Run, runner.SaveOptions{}), "a renewed lease still saves")
	require.Equal(t, []string{"r2"}, Claim(t, s, "B", 2*time.Minute, 2), "r1's renewed lease holds")

	lost, cancelled, err = renew(6*time.Minute, r1.Lease, r2.Lease, runner.NewLease("nope", "A"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"r2", "nope"}, lost)
	require.Empty(t, cancelled)

	_, err = s.RequestCancel(ctx, "r1", base.Add(3*time.Minute))
	require.NoError(t, err)
	lost, cancelled, err = renew(7*time.Minute, r1.Lease)
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Equal(t, []string{"r1"}, cancelled)

	lost, cancelled, err = renew(time.Hour)
	require.NoError(t, err, "no leases: nothing to renew")
	require.Empty(t, lost)
	require.Empty(t, cancelled)
}

// testRenewRefused: leases of two owners, or a zero lease among them, are refused before
// anything is written; a forged lease of another owner is lost. None extends a lease.
func testRenewRefused(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r1", 0, 0), NewRun("r2", 0, time.Second))
	a := claimOne(t, s, "A", 0, "r1")
	b := claimOne(t, s, "B", time.Second, "r2")
	for _, tc := range []struct {
		name   string
		leases []runner.Lease
		want   error
	}{
		{"leases of two owners", []runner.Lease{a.Lease, b.Lease}, runner.ErrLeaseOwners},
		{"a zero lease", []runner.Lease{a.Lease, {}}, runner.ErrLeaseLost},
		{"only a zero lease", []runner.Lease{{}}, runner.ErrLeaseLost},
	} {
		_, _, err := s.RenewLeases(ctx, runner.RenewLeasesParams{Leases: tc.leases, Until: base.Add(time.Hour)})
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	lost, _, err := s.RenewLeases(ctx,
		runner.RenewLeasesParams{Leases: []runner.Lease{runner.NewLease("r1", "B")}, Until: base.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, []string{"r1"}, lost, "a lease B does not hold is lost")
	require.Equal(t, []string{"r1", "r2"}, Claim(t, s, "C", time.Minute+time.Second+time.Millisecond, 2),
		"no lease was extended")
}

func testRequestCancel(t *testing.T, s runner.Store) {
	ctx := context.Background()
	idle := NewRun("idle", 0, -1)
	idle.Status = runner.StatusWaiting
	done := Ended(NewRun("done", 0, -1), runner.StatusCompleted, 0)
	create(t, s, idle, done)

	r, err := s.RequestCancel(ctx, "idle", base.Add(5*time.Second))
	require.NoError(t, err)
	require.Equal(t, "idle", r.ID)
	require.True(t, r.CancelRequested)
	require.Empty(t, Claim(t, s, "A", 4*time.Second, 1))
	c := claimOne(t, s, "A", 5*time.Second, "idle") // a cancel makes the run due now
	require.True(t, c.Run.CancelRequested)

	_, err = s.RequestCancel(ctx, "done", base)
	require.ErrorIs(t, err, runner.ErrFinished)
	_, err = s.RequestCancel(ctx, "nope", base)
	require.ErrorIs(t, err, runner.ErrNotFound)
}

func testWakeRun(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r", 0, -1))
	require.Empty(t, Claim(t, s, "A", time.Hour, 1))
	require.NoError(t, s.WakeRun(ctx, "r", base.Add(10*time.Second)))
	require.NoError(t, s.WakeRun(ctx, "r", base.Add(time.Hour)), "a later wake-up does not postpone")
	require.Empty(t, Claim(t, s, "A", 9*time.Second, 1))
	require.Equal(t, []string{"r"}, Claim(t, s, "A", 10*time.Second, 1))
	require.ErrorIs(t, s.WakeRun(ctx, "nope", base), runner.ErrNotFound)
}
