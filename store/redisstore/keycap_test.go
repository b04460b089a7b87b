package redisstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/redisstore"
)

// TestKeyCapReadsBounded performs on Redis the attack of a caller at its scope's key cap,
// every call refused: the scope holds 1,000 abandoned claims and 1,000 expired keys
// besides its live ones, in the layout written before abandoned claims had a set of their
// own (in the expiry and lock indexes, as never-checked claims still are). The key checks
// count them right, and once the first calls have freed the expired keys and set the
// abandoned claims apart (each once), a refused claim or admission reads one index entry:
// the oldest live key it names. The number is the one the scripts return.
func TestKeyCapReadsBounded(t *testing.T) {
	s, rdb, prefix := freshRaw(t)
	ctx := context.Background()
	var reads int64 = -1
	redisstore.OnKeyReads(s, func(n int64) { reads = n })
	const scope, limit, abandoned, expired = "p:attacker", 3, 1000, 1000
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	later := now.Add(2 * time.Minute) // past every claim's lock and every expired key's life
	claim := func(key string, at time.Time, lim int, evict bool) idempotency.ClaimResult {
		t.Helper()
		res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: scope, Key: key, Fingerprint: "fp", Method: http.MethodPost,
			Path: "/p", Now: at, LockTTL: time.Minute, Limit: lim, EvictOldest: evict})
		require.NoError(t, err)
		return res
	}
	keep := func(key string, life time.Duration) {
		t.Helper()
		require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: key, Fingerprint: "fp",
			Method: http.MethodPost, Path: "/p", State: idempotency.StateDone, Status: http.StatusOK,
			CreatedAt: now, ExpiresAt: now.Add(life)}))
	}
	for i := range abandoned {
		require.Equal(t, idempotency.Claimed, claim(fmt.Sprint("gone-", i), now, 0, false).Outcome)
	}
	for i := range expired {
		keep(fmt.Sprint("old-", i), time.Minute)
	}
	keep("live-0", time.Hour)
	keep("live-1", time.Hour+time.Second)

	card := func(family string) int64 {
		n, err := rdb.ZCard(ctx, prefix+family+":"+scope).Result()
		require.NoError(t, err)
		return n
	}
	require.Equal(t, int64(0), card("idemdead"), "the old layout: abandoned claims in the expiry and lock indexes")
	require.Equal(t, int64(abandoned), card("idemlock"))

	// Two live keys: abandoned and expired keys do not count, though most expired ones
	// are still stored after this check's batch.
	require.Equal(t, idempotency.Claimed, claim("third", later, limit, false).Outcome)
	require.Equal(t, int64(abandoned), card("idemdead"), "set apart at the cap, each once")
	require.Equal(t, int64(1), card("idemlock"), "only the live claim")
	require.Less(t, reads, int64(abandoned+expired), "the check read fewer entries than the scope holds")

	// The attack: each refused call reads a constant number of entries besides those it frees.
	var steady int
	for call := range 40 {
		reads = -1
		res := claim(fmt.Sprint("x-", call), later, limit, false)
		require.Equal(t, idempotency.LimitReached, res.Outcome)
		require.True(t, now.Add(time.Hour).Equal(res.Oldest), "the oldest live key: %v", res.Oldest)
		if reads == 1 {
			steady++
		}
	}
	require.GreaterOrEqual(t, steady, 30, "past the batches that purge the expired keys, a refusal reads one entry")
	require.Equal(t, int64(limit), card("idemexp"), "the expiry index holds the live keys only")
	require.Equal(t, int64(abandoned), card("idemdead"))

	// An admission at the cap is refused the same way.
	reads = -1
	r := &runner.Run{ID: "r-capped", WorkflowID: "wf", Workflow: "wf", Version: 1, Environment: runner.EnvProduction,
		Status: runner.StatusPending, Input: json.RawMessage(`{}`), CreatedAt: later}
	kw := &idempotency.KeyWrite{
		Claim: idempotency.ClaimParams{Scope: scope, Key: "admitted", Fingerprint: "fp", Method: http.MethodPost,
			Path: "/p", Now: later, LockTTL: time.Minute, Limit: limit},
		Answer: &idempotency.Record{Scope: scope, Key: "admitted", Fingerprint: "fp", Method: http.MethodPost, Path: "/p",
			RunID: r.ID, State: idempotency.StateDone, Status: http.StatusAccepted, CreatedAt: later, ExpiresAt: later.Add(time.Hour)},
	}
	res, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r, Key: kw})
	require.NoError(t, err)
	require.Equal(t, idempotency.LimitReached, res.Outcome)
	require.Equal(t, int64(1), reads)

	// Evicting at the cap reads the one key it evicts, the first to expire.
	reads = -1
	require.Equal(t, idempotency.Claimed, claim("evicting", later, limit, true).Outcome)
	require.Equal(t, int64(1), reads)
	_, err = s.Get(ctx, scope, "live-0", later)
	require.ErrorIs(t, err, idempotency.ErrNotFound)

	// An abandoned claim set apart is taken over like any free key, and leaves the set.
	reads = -1
	require.Equal(t, idempotency.Claimed, claim("gone-7", later, 0, false).Outcome)
	require.Equal(t, int64(abandoned-1), card("idemdead"))
	require.Equal(t, int64(0), reads)

	// Once expired, the abandoned claims are purged a batch per check.
	for range abandoned/100 + 1 {
		claim("late", now.Add(25*time.Hour), 0, false)
	}
	require.Equal(t, int64(0), card("idemdead"))
}

// TestListOnlyReads: a page of keys leaves a scope's expired keys out of the answer and
// writes nothing: the expired keys stay in the creation and expiry indexes, and the
// abandoned claim is not set apart, until a claim purges them. Abandoned claims are still
// listed (they have not expired).
func TestListOnlyReads(t *testing.T) {
	s, rdb, prefix := freshRaw(t)
	ctx := context.Background()
	const scope, expired = "p:lister", 250
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range expired {
		require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: fmt.Sprint("old-", i),
			State: idempotency.StateDone, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}))
	}
	_, err := s.Claim(ctx, idempotency.ClaimParams{Scope: scope, Key: "gone", Now: now, LockTTL: time.Minute})
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: "live",
		State: idempotency.StateDone, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	cards := func() map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		for _, family := range []string{"idemnew", "idemexp", "idemlock", "idemdead"} {
			n, err := rdb.ZCard(ctx, prefix+family+":"+scope).Result()
			require.NoError(t, err)
			out[family] = n
		}
		return out
	}
	before := cards()
	require.Equal(t, int64(expired+2), before["idemnew"])

	later := now.Add(2 * time.Minute)
	var keys []string
	for cursor := ""; ; {
		recs, next, err := s.List(ctx, idempotency.ListParams{Scope: scope, Now: later, Limit: 1, Cursor: cursor})
		require.NoError(t, err)
		for _, r := range recs {
			keys = append(keys, r.Key)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	require.ElementsMatch(t, []string{"gone", "live"}, keys)
	require.Equal(t, before, cards(), "List wrote nothing")

	_, err = s.Claim(ctx, idempotency.ClaimParams{Scope: scope, Key: "new", Now: later, LockTTL: time.Minute})
	require.NoError(t, err)
	require.Less(t, cards()["idemexp"], before["idemexp"], "a claim purges expired keys")
}

// TestListPastExpiredKeysFewRoundTrips performs the costly page of keys for real: a scope
// whose 1,000 oldest keys expired with no claim since, listed one key a page. Each read of
// the creation index asks for more entries than the last, so that the page that walks
// past the expired keys costs a few round trips, not one pair per `limit` entries.
func TestListPastExpiredKeysFewRoundTrips(t *testing.T) {
	s, _, _ := freshRaw(t)
	ctx := context.Background()
	const scope, expired = "p:walker", 1000
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range expired {
		require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: fmt.Sprint("old-", i),
			State: idempotency.StateDone, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}))
	}
	require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: "live",
		State: idempotency.StateDone, CreatedAt: now.Add(time.Second), ExpiresAt: now.Add(time.Hour)}))
	var trips int
	redisstore.OnRoundTrips(s, func([]string) { trips++ })

	recs, next, err := s.List(ctx, idempotency.ListParams{Scope: scope, Now: now.Add(2 * time.Minute), Limit: 1})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, recs, 1)
	require.Equal(t, "live", recs[0].Key)
	require.LessOrEqual(t, trips, 24, "two round trips a read of the index, each read twice the last")
}

// TestListReadsNoBodies: a page of keys shows no kept answer, and reads none from Redis
// (counted by a TCP proxy in front of it): 20 keys whose answers are 60 KiB each, live
// or expired, are listed for a few KiB, not 1.2 MB.
func TestListReadsNoBodies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, raw, prefix := freshAt(t)
	const scope = "p:bodies"
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	body := bytes.Repeat([]byte("x"), 60<<10)
	for i := range 20 {
		require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: fmt.Sprint("k-", i), State: idempotency.StateDone,
			Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}}, Body: body,
			CreatedAt: now.Add(time.Duration(i) * time.Second), ExpiresAt: now.Add(time.Duration(i) * time.Minute)}))
	}
	u, err := url.Parse(raw)
	require.NoError(t, err)
	p := newProxy(t, u.Host)
	u.Host = p.addr()
	through, err := redisstore.Open(ctx, u.String(), &redisstore.Config{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = through.Close() })

	before := p.bytes.Load()
	recs, next, err := through.List(ctx, idempotency.ListParams{Scope: scope, Now: now.Add(10*time.Minute + time.Second), Limit: 20})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, recs, 9, "k-11 … k-19 live")
	for _, r := range recs {
		require.Equal(t, http.StatusOK, r.Status)
		require.Nil(t, r.Body)
		require.Nil(t, r.Header)
	}
	require.Less(t, p.bytes.Load()-before, int64(len(body)), "less than one answer's body read")
}
