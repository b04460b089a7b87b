package storetest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store"
)

// RunAdmission runs the atomic-admission suite: CreateRun with a key writes the run and
// the key's answer together, or (key live, scope full, token owned) nothing at all.
// newStore must return a fresh, empty, isolated store on each call.
func RunAdmission(t *testing.T, newStore func(t *testing.T) store.Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Backend)
	}{
		{"KeyFree", testAdmitKeyFree},
		{"KeyLive", testAdmitKeyLive},
		{"KeyInProgress", testAdmitKeyInProgress},
		{"Limit", testAdmitLimit},
		{"EvictOldest", testAdmitEvictOldest},
		{"TokenConflict", testAdmitTokenConflict},
		{"Race", testAdmitRace},
		{"Lease", testAdmitLease},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

const admitScope = "p:admitter"

// base is the clock start of the runner suite's fixtures (runnertest.NewRun), which these
// suites share.
var base = runnertest.Base()

// keyWrite is key's claim at now with a kept answer naming runID.
func keyWrite(key, runID string, now time.Time, limit int, evict bool) *idempotency.KeyWrite {
	claim := idempotency.ClaimParams{
		Scope: admitScope, Key: key, Fingerprint: "fp-" + key, Method: http.MethodPost,
		Path: "/api/workflows/orders/run", Now: now, LockTTL: time.Minute, Limit: limit, EvictOldest: evict,
	}
	return &idempotency.KeyWrite{Claim: claim, Answer: &idempotency.Record{
		Scope: admitScope, Key: key, Fingerprint: claim.Fingerprint, Method: claim.Method, Path: claim.Path,
		RunID: runID, State: idempotency.StateDone, Status: http.StatusAccepted,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(`{"data":{"id":"` + runID + `"}}`), CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour),
	}}
}

func admit(t *testing.T, s store.Backend, p runner.CreateRunParams) idempotency.ClaimResult {
	t.Helper()
	res, err := s.CreateRun(context.Background(), p)
	require.NoError(t, err)
	return res.ClaimResult
}

// requireNoRun checks that run id was not written.
func requireNoRun(t *testing.T, s store.Backend, id string) {
	t.Helper()
	_, err := s.GetRun(context.Background(), id)
	require.ErrorIs(t, err, runner.ErrNotFound, "run %s must not be written", id)
}

// requireKept checks that key is done, keeping the answer that names runID.
func requireKept(t *testing.T, s store.Backend, key, runID string, now time.Time) {
	t.Helper()
	rec, err := s.Get(context.Background(), admitScope, key, now)
	require.NoError(t, err)
	require.Equal(t, idempotency.StateDone, rec.State)
	require.Equal(t, runID, rec.RunID)
	require.Equal(t, http.StatusAccepted, rec.Status)
	require.JSONEq(t, `{"data":{"id":"`+runID+`"}}`, string(rec.Body))
	require.Equal(t, "application/json", rec.Header.Get("Content-Type"))
}

func testAdmitKeyFree(t *testing.T, s store.Backend) {
	res := admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r1", 0, 0), Key: keyWrite("k", "r1", base, 10, false)})
	require.Equal(t, idempotency.Claimed, res.Outcome)
	runnertest.RequireRun(t, runnertest.NewRun("r1", 0, 0), runnertest.Get(t, s, "r1"))
	requireKept(t, s, "k", "r1", base.Add(time.Second))
	require.Equal(t, []string{"r1"}, runnertest.Claim(t, s, "A", time.Second, 10), "an admitted run is due as any other")
}

func testAdmitKeyLive(t *testing.T, s store.Backend) {
	admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r1", 0, 0), Key: keyWrite("k", "r1", base, 10, false)})
	res := admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r2", 0, 0), Key: keyWrite("k", "r2", base.Add(time.Second), 10, false)})
	require.Equal(t, idempotency.Existing, res.Outcome)
	require.Equal(t, "r1", res.Record.RunID, "the live key reports its record")
	require.Equal(t, idempotency.StateDone, res.Record.State)
	requireNoRun(t, s, "r2")
	requireKept(t, s, "k", "r1", base.Add(2*time.Second))
}

func testAdmitKeyInProgress(t *testing.T, s store.Backend) {
	c, err := s.Claim(context.Background(), keyWrite("k", "", base, 10, false).Claim)
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, c.Outcome)
	res := admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r1", 0, 0), Key: keyWrite("k", "r1", base.Add(time.Second), 10, false)})
	require.Equal(t, idempotency.Existing, res.Outcome)
	require.Equal(t, idempotency.StateInProgress, res.Record.State)
	requireNoRun(t, s, "r1")

	later := base.Add(2 * time.Minute) // past the claim's LockTTL: abandoned, taken over
	res = admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r2", 0, 0), Key: keyWrite("k", "r2", later, 10, false)})
	require.Equal(t, idempotency.Claimed, res.Outcome)
	requireKept(t, s, "k", "r2", later)
}

func testAdmitLimit(t *testing.T, s store.Backend) {
	admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r1", 0, 0), Key: keyWrite("k1", "r1", base, 1, false)})
	res := admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r2", 0, 0), Key: keyWrite("k2", "r2", base.Add(time.Second), 1, false)})
	require.Equal(t, idempotency.LimitReached, res.Outcome)
	require.True(t, base.Add(24*time.Hour).Equal(res.Oldest), "when the oldest key expires: %v", res.Oldest)
	requireNoRun(t, s, "r2")
	_, err := s.Get(context.Background(), admitScope, "k2", base.Add(time.Second))
	require.ErrorIs(t, err, idempotency.ErrNotFound)
	requireKept(t, s, "k1", "r1", base.Add(time.Second))
}

func testAdmitEvictOldest(t *testing.T, s store.Backend) {
	admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r1", 0, 0), Key: keyWrite("k1", "r1", base, 1, true)})
	res := admit(t, s, runner.CreateRunParams{Run: runnertest.NewRun("r2", 0, 0), Key: keyWrite("k2", "r2", base.Add(time.Second), 1, true)})
	require.Equal(t, idempotency.Claimed, res.Outcome)
	_, err := s.Get(context.Background(), admitScope, "k1", base.Add(time.Second))
	require.ErrorIs(t, err, idempotency.ErrNotFound, "the oldest key is evicted")
	requireKept(t, s, "k2", "r2", base.Add(time.Second))
}

// testAdmitTokenConflict: a key that is free but a start token owned by another run →
// the conflict, and nothing written: no run, the key still free, no key evicted for it.
func testAdmitTokenConflict(t *testing.T, s store.Backend) {
	ctx := context.Background()
	owner, second := runnertest.NewRun("owner", 0, 0), runnertest.NewRun("second", 0, 0)
	owner.StartToken, second.StartToken = "order-1", "order-1"
	admit(t, s, runner.CreateRunParams{Run: owner, Start: runnertest.Hook(runner.EnvProduction, "order-1", "owner"), Key: keyWrite("k1", "owner", base, 1, true)})
	_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: second, Start: runnertest.Hook(runner.EnvProduction, "order-1", "second"),
		Key: keyWrite("k2", "second", base.Add(time.Second), 1, true)})
	runnertest.RequireConflict(t, err, runner.EnvProduction, "order-1", "owner")
	requireNoRun(t, s, "second")
	_, err = s.Get(ctx, admitScope, "k2", base.Add(time.Second))
	require.ErrorIs(t, err, idempotency.ErrNotFound)
	requireKept(t, s, "k1", "owner", base.Add(time.Second))
}

func testAdmitRace(t *testing.T, s store.Backend) {
	const n = 8
	results := make([]idempotency.ClaimResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("r%d", i)
			res, err := s.CreateRun(context.Background(), runner.CreateRunParams{Run: runnertest.NewRun(id, 0, 0), Key: keyWrite("k", id, base, 10, false)})
			require.NoError(t, err)
			results[i] = res.ClaimResult
		}()
	}
	wg.Wait()
	var winner string
	for i, res := range results {
		if res.Outcome == idempotency.Claimed {
			require.Empty(t, winner, "exactly one admission wins")
			winner = fmt.Sprintf("r%d", i)
		}
	}
	require.NotEmpty(t, winner)
	for i, res := range results {
		id := fmt.Sprintf("r%d", i)
		if id == winner {
			continue
		}
		require.Equal(t, idempotency.Existing, res.Outcome)
		require.Equal(t, winner, res.Record.RunID)
		requireNoRun(t, s, id)
	}
	requireKept(t, s, "k", winner, base)
}

// testAdmitLease: a run admitted with its lease is worked by its admitter; other workers
// take it only once the lease expires, counting a second claim, as after any vanished one.
func testAdmitLease(t *testing.T, s store.Backend) {
	ctx := context.Background()
	res, err := s.CreateRun(ctx, runner.CreateRunParams{Run: runnertest.NewRun("r", 0, 0), Owner: "A", LeaseUntil: base.Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome)
	require.Equal(t, runner.NewLease("r", "A"), res.Lease, "the admission hands out its lease")
	require.Equal(t, 1, runnertest.Get(t, s, "r").Claims, "the admission counts as a claim")
	require.Empty(t, runnertest.Claim(t, s, "B", 30*time.Second, 10), "the lease holds")
	lost, _, err := s.RenewLeases(ctx,
		runner.RenewLeasesParams{Leases: []runner.Lease{res.Lease}, Until: base.Add(2 * time.Minute)})
	require.NoError(t, err)
	require.Empty(t, lost, "the admitter holds the lease")
	require.Empty(t, runnertest.Claim(t, s, "B", 90*time.Second, 10), "the renewed lease holds")
	require.Equal(t, []string{"r"}, runnertest.Claim(t, s, "B", 2*time.Minute+time.Millisecond, 10), "an expired lease is taken over")
	require.Equal(t, 2, runnertest.Get(t, s, "r").Claims)
	require.ErrorIs(t, s.SaveRun(ctx, res.Lease, runnertest.Get(t, s, "r"), runner.SaveOptions{}), runner.ErrLeaseLost,
		"the admitter's lease is lost")

	free, err := s.CreateRun(ctx, runner.CreateRunParams{Run: runnertest.NewRun("free", 0, 0)})
	require.NoError(t, err)
	require.Zero(t, free.Lease, "an admission without an owner takes no lease")
}
