// Package idemtest is the conformance suite of idempotency.Store: every backend runs it
// from its own tests with Run. Times are passed explicitly; nothing waits on the wall clock.
// It also checks what idempotency.Service's finished keys held in memory rely on: a
// finished key stands until it expires, except in a scope that evicts.
package idemtest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

var base = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC)

const (
	lockTTL = 10 * time.Second
	keepFor = 24 * time.Hour
)

// Run runs the suite. newStore must return a fresh, empty, isolated store on each call.
func Run(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s idempotency.Store)
	}{
		{"ClaimCompleteReplay", testClaimCompleteReplay},
		{"Taken", testTaken},
		{"Release", testRelease},
		{"AbandonedLock", testAbandonedLock},
		{"Expiry", testExpiry},
		{"Limit", testLimit},
		{"LimitInProgress", testLimitInProgress},
		{"UnderLimit", testUnderLimit},
		{"EvictOldest", testEvictOldest},
		{"ScopesIndependent", testScopesIndependent},
		{"ClaimRace", testClaimRace},
		{"List", testList},
		{"ListSkipsGoneKeys", testListSkipsGoneKeys},
		{"FinishedKeyStands", testFinishedKeyStands},
		{"ServiceHoldsFinishedKeys", testServiceHoldsFinishedKeys},
		{"SealedAnswers", testSealedAnswers},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func claim(t *testing.T, s idempotency.Store, scope, key string, now time.Time) idempotency.ClaimResult {
	t.Helper()
	res, err := s.Claim(context.Background(), idempotency.ClaimParams{
		Scope: scope, Key: key, Fingerprint: "fp-" + key, Now: now, LockTTL: lockTTL,
	})
	require.NoError(t, err)
	return res
}

// complete claims key at now and stores its answer, kept until now+keep.
func complete(t *testing.T, s idempotency.Store, scope, key string, now time.Time, keep time.Duration) *idempotency.Record {
	t.Helper()
	require.Equal(t, idempotency.Claimed, claim(t, s, scope, key, now).Outcome)
	r := &idempotency.Record{
		Scope: scope, Key: key, Fingerprint: "fp-" + key, State: idempotency.StateDone,
		Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`{"data":"` + key + `"}`), CreatedAt: now, ExpiresAt: now.Add(keep),
	}
	require.NoError(t, s.Complete(context.Background(), r))
	return r
}

func testClaimCompleteReplay(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	_, err := s.Get(ctx, "p:a", "k", base)
	require.ErrorIs(t, err, idempotency.ErrNotFound)

	require.Equal(t, idempotency.Claimed, claim(t, s, "p:a", "k", base).Outcome)
	res := claim(t, s, "p:a", "k", base.Add(time.Second))
	require.Equal(t, idempotency.Existing, res.Outcome)
	require.Equal(t, idempotency.StateInProgress, res.Record.State)
	require.Equal(t, "fp-k", res.Record.Fingerprint)
	require.True(t, res.Record.LockedUntil.After(base.Add(time.Second)))

	answered := base.Add(2 * time.Second)
	r := &idempotency.Record{
		Scope: "p:a", Key: "k", Fingerprint: "fp-k", State: idempotency.StateDone, Status: 201,
		Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/api/runs/1"}},
		Body:   []byte(`{"data":1}`), CreatedAt: base, ExpiresAt: answered.Add(keepFor),
	}
	require.NoError(t, s.Complete(ctx, r))

	for _, got := range []*idempotency.Record{getRecord(t, s, "p:a", "k", answered), claim(t, s, "p:a", "k", answered).Record} {
		require.Equal(t, idempotency.StateDone, got.State)
		require.Equal(t, "fp-k", got.Fingerprint)
		require.Equal(t, 201, got.Status)
		require.Equal(t, r.Header, got.Header)
		require.Equal(t, r.Body, got.Body)
		require.True(t, r.ExpiresAt.Equal(got.ExpiresAt), "expires %v, want %v", got.ExpiresAt, r.ExpiresAt)
	}
}

func getRecord(t *testing.T, s idempotency.Store, scope, key string, now time.Time) *idempotency.Record {
	t.Helper()
	r, err := s.Get(context.Background(), scope, key, now)
	require.NoError(t, err)
	return r
}

func testTaken(t *testing.T, s idempotency.Store) {
	require.Equal(t, idempotency.Claimed, claim(t, s, "p:a", "big", base).Outcome)
	require.NoError(t, s.Complete(context.Background(), &idempotency.Record{
		Scope: "p:a", Key: "big", Fingerprint: "fp-big", State: idempotency.StateTaken, Status: 202,
		CreatedAt: base, ExpiresAt: base.Add(keepFor),
	}))
	res := claim(t, s, "p:a", "big", base.Add(time.Hour))
	require.Equal(t, idempotency.Existing, res.Outcome)
	require.Equal(t, idempotency.StateTaken, res.Record.State)
	require.Empty(t, res.Record.Body)
}

func testRelease(t *testing.T, s idempotency.Store) {
	require.Equal(t, idempotency.Claimed, claim(t, s, "p:a", "k", base).Outcome)
	require.NoError(t, s.Release(context.Background(), "p:a", "k"))
	_, err := s.Get(context.Background(), "p:a", "k", base)
	require.ErrorIs(t, err, idempotency.ErrNotFound)
	require.Equal(t, idempotency.Claimed, claim(t, s, "p:a", "k", base.Add(time.Millisecond)).Outcome,
		"a released key is free at once")
}

func testAbandonedLock(t *testing.T, s idempotency.Store) {
	require.Equal(t, idempotency.Claimed, claim(t, s, "p:a", "k", base).Outcome)
	require.Equal(t, idempotency.Existing, claim(t, s, "p:a", "k", base.Add(lockTTL-time.Millisecond)).Outcome,
		"the lock still holds")

	later := base.Add(lockTTL + time.Second)
	res, err := s.Claim(context.Background(), idempotency.ClaimParams{
		Scope: "p:a", Key: "k", Fingerprint: "fp-new", Now: later, LockTTL: lockTTL,
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome, "an abandoned claim is taken over")
	got := getRecord(t, s, "p:a", "k", later)
	require.Equal(t, "fp-new", got.Fingerprint)
	require.Equal(t, idempotency.StateInProgress, got.State)
	require.True(t, got.LockedUntil.After(later))
}

func testExpiry(t *testing.T, s idempotency.Store) {
	complete(t, s, "p:a", "k", base, time.Hour)
	require.Equal(t, idempotency.Existing, claim(t, s, "p:a", "k", base.Add(time.Hour-time.Nanosecond)).Outcome)

	expired := base.Add(time.Hour)
	_, err := s.Get(context.Background(), "p:a", "k", expired)
	require.ErrorIs(t, err, idempotency.ErrNotFound, "expired")
	require.Equal(t, idempotency.Claimed, claim(t, s, "p:a", "k", expired).Outcome, "an expired key is free")
}

func limited(scope, key string, now time.Time, limit int, evict bool) idempotency.ClaimParams {
	return idempotency.ClaimParams{Scope: scope, Key: key, Fingerprint: "fp-" + key, Now: now,
		LockTTL: lockTTL, Limit: limit, EvictOldest: evict}
}

func testLimit(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	complete(t, s, "p:a", "k2", base, 2*time.Hour)
	complete(t, s, "p:a", "k1", base, time.Hour)
	complete(t, s, "p:a", "k3", base, 3*time.Hour)
	now := base.Add(time.Minute)

	res, err := s.Claim(ctx, limited("p:a", "k4", now, 3, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.LimitReached, res.Outcome)
	require.True(t, base.Add(time.Hour).Equal(res.Oldest), "oldest %v", res.Oldest)
	_, err = s.Get(ctx, "p:a", "k4", now)
	require.ErrorIs(t, err, idempotency.ErrNotFound, "nothing written")

	res, err = s.Claim(ctx, limited("p:a", "k1", now, 3, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.Existing, res.Outcome, "a kept key still replays at the limit")

	res, err = s.Claim(ctx, limited("p:a", "k4", base.Add(time.Hour), 3, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome, "an expired key does not count")
}

// testUnderLimit: in a scope under its cap a live key is reported whatever the request, an
// abandoned claim and an expired key are taken over, and the scope still counts the key
// once.
func testUnderLimit(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	take := func(key, fp string, now time.Time) idempotency.ClaimResult {
		t.Helper()
		p := limited("p:a", key, now, 10, false)
		p.Fingerprint = fp
		res, err := s.Claim(ctx, p)
		require.NoError(t, err)
		return res
	}
	require.Equal(t, idempotency.Claimed, take("k", "fp-1", base).Outcome)
	res := take("k", "fp-2", base.Add(time.Second))
	require.Equal(t, idempotency.Existing, res.Outcome, "the lock holds")
	require.Equal(t, "fp-1", res.Record.Fingerprint, "and the claim is left as it was")
	require.Equal(t, idempotency.StateInProgress, res.Record.State)

	later := base.Add(lockTTL + time.Second)
	require.Equal(t, idempotency.Claimed, take("k", "fp-2", later).Outcome, "an abandoned claim is taken over")
	got := getRecord(t, s, "p:a", "k", later)
	require.Equal(t, "fp-2", got.Fingerprint)
	require.True(t, got.LockedUntil.After(later))

	require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: "p:a", Key: "k", Fingerprint: "fp-2",
		State: idempotency.StateDone, Status: http.StatusCreated, Body: []byte(`{"data":"k"}`), CreatedAt: later,
		ExpiresAt: later.Add(time.Hour)}))
	res = take("k", "fp-3", later.Add(time.Hour-time.Nanosecond))
	require.Equal(t, idempotency.Existing, res.Outcome, "a kept answer stands until it expires")
	require.Equal(t, []byte(`{"data":"k"}`), res.Record.Body)
	expired := later.Add(time.Hour)
	require.Equal(t, idempotency.Claimed, take("k", "fp-3", expired).Outcome, "an expired key is free")
	require.Equal(t, "fp-3", getRecord(t, s, "p:a", "k", expired).Fingerprint)

	res, err := s.Claim(ctx, limited("p:a", "other", expired, 2, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome, "the key taken over three times counts once")
	res, err = s.Claim(ctx, limited("p:a", "third", expired, 2, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.LimitReached, res.Outcome)
}

func testLimitInProgress(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	require.Equal(t, idempotency.Claimed, claim(t, s, "p:a", "k1", base).Outcome)
	now := base.Add(time.Second)
	res, err := s.Claim(ctx, limited("p:a", "k2", now, 1, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.LimitReached, res.Outcome, "an in-progress key counts")
	require.True(t, res.Oldest.After(now), "oldest %v must lie ahead", res.Oldest)
}

func testEvictOldest(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	complete(t, s, "w:1", "k1", base, time.Hour)
	complete(t, s, "w:1", "k2", base, 2*time.Hour)
	now := base.Add(time.Minute)

	res, err := s.Claim(ctx, limited("w:1", "k3", now, 2, true))
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome)
	_, err = s.Get(ctx, "w:1", "k1", now)
	require.ErrorIs(t, err, idempotency.ErrNotFound, "the oldest key was evicted")
	getRecord(t, s, "w:1", "k2", now)
	getRecord(t, s, "w:1", "k3", now)
}

func testScopesIndependent(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	complete(t, s, "p:a", "k", base, time.Hour)
	require.Equal(t, idempotency.Claimed, claim(t, s, "p:b", "k", base).Outcome, "same key, other scope")

	res, err := s.Claim(ctx, limited("p:a", "other", base, 1, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.LimitReached, res.Outcome)
	res, err = s.Claim(ctx, limited("p:c", "other", base, 1, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome, "limits are per scope")
}

func testClaimRace(t *testing.T, s idempotency.Store) {
	const n = 50
	outcomes := make(chan idempotency.Outcome, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := s.Claim(context.Background(), idempotency.ClaimParams{
				Scope: "p:race", Key: "k", Fingerprint: fmt.Sprint("fp-", i), Now: base, LockTTL: lockTTL,
				Limit: 10,
			})
			errs <- err
			outcomes <- res.Outcome
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	close(outcomes)
	for err := range errs {
		require.NoError(t, err)
	}
	count := map[idempotency.Outcome]int{}
	for o := range outcomes {
		count[o]++
	}
	require.Equal(t, map[idempotency.Outcome]int{idempotency.Claimed: 1, idempotency.Existing: n - 1}, count)
}

// listAll pages through scope's keys at now, pageSize at a time, and returns their keys.
func listAll(t *testing.T, s idempotency.Store, scope string, now time.Time, pageSize int) ([]*idempotency.Record, int) {
	t.Helper()
	var all []*idempotency.Record
	cursor, pages := "", 0
	for {
		page, next, err := s.List(context.Background(), idempotency.ListParams{
			Scope: scope, Now: now, Limit: pageSize, Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), pageSize)
		all, pages = append(all, page...), pages+1
		if next == "" {
			return all, pages
		}
		cursor = next
	}
}

func keysOf(recs []*idempotency.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Key
	}
	return out
}

func testList(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	for i := range 5 {
		complete(t, s, "p:a", fmt.Sprintf("k%d", i), base.Add(time.Duration(i)*time.Second), keepFor)
	}
	complete(t, s, "p:b", "other", base, keepFor)
	res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: "p:a", Key: "busy", Fingerprint: "fp",
		Method: "POST", Path: "/api/workflows/greet/run", Now: base.Add(10 * time.Second), LockTTL: lockTTL})
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome)
	r := &idempotency.Record{Scope: "p:a", Key: "ran", Fingerprint: "fp-ran", Method: "POST",
		Path: "/api/workflows/greet/run", RunID: "run-1", State: idempotency.StateTaken, Status: http.StatusAccepted,
		CreatedAt: base.Add(20 * time.Second), ExpiresAt: base.Add(keepFor)}
	require.NoError(t, s.Complete(ctx, r))

	now := base.Add(30 * time.Second)
	all, pages := listAll(t, s, "p:a", now, 2)
	require.Equal(t, []string{"ran", "busy", "k4", "k3", "k2", "k1", "k0"}, keysOf(all))
	require.Equal(t, 4, pages)
	for _, rec := range all {
		require.Nil(t, rec.Body, "a list leaves the kept answers out")
	}
	require.Equal(t, idempotency.StateTaken, all[0].State)
	require.Equal(t, "run-1", all[0].RunID)
	require.Equal(t, "/api/workflows/greet/run", all[0].Path)
	require.Equal(t, http.StatusAccepted, all[0].Status)
	require.True(t, base.Add(20*time.Second).Equal(all[0].CreatedAt))
	require.Equal(t, idempotency.StateInProgress, all[1].State)
	require.Equal(t, "POST", all[1].Method)
	require.Equal(t, idempotency.StateDone, all[2].State)

	got, err := s.Get(ctx, "p:a", "ran", now)
	require.NoError(t, err)
	require.Equal(t, "run-1", got.RunID)
	require.Equal(t, "POST", got.Method)

	other, _ := listAll(t, s, "p:b", now, 10)
	require.Equal(t, []string{"other"}, keysOf(other))
	none, _ := listAll(t, s, "p:c", now, 10)
	require.Empty(t, none)

	_, _, err = s.List(ctx, idempotency.ListParams{Scope: "p:a", Now: now, Cursor: "not-a-cursor"})
	require.ErrorIs(t, err, idempotency.ErrInvalidCursor)
}

func testListSkipsGoneKeys(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	complete(t, s, "p:a", "short", base, time.Minute)
	complete(t, s, "p:a", "long", base.Add(time.Second), keepFor)
	require.Equal(t, idempotency.Claimed, claim(t, s, "p:a", "freed", base.Add(2*time.Second)).Outcome)
	require.NoError(t, s.Release(ctx, "p:a", "freed"))

	all, _ := listAll(t, s, "p:a", base.Add(time.Hour), 1)
	require.Equal(t, []string{"long"}, keysOf(all), "expired and released keys are not listed")
}
