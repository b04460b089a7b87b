package sqlitestore

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// TestScopeCountsFollowTheKeys: the per-scope key counts that spare an admission counting
// its scope's keys stay equal to the keys stored, through claims, answers kept over
// claims, releases, evictions at the cap and purges of expired keys; and a scope at its cap
// is still refused or has its oldest key evicted as before.
func TestScopeCountsFollowTheKeys(t *testing.T) {
	ctx := context.Background()
	s, _ := openT(t)
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	claim := func(scope, key string, at time.Time, limit int, evict bool) idempotency.ClaimResult {
		t.Helper()
		res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: scope, Key: key, Fingerprint: "fp", Method: http.MethodPost,
			Path: "/p", Now: at, LockTTL: time.Minute, Limit: limit, EvictOldest: evict})
		require.NoError(t, err)
		return res
	}
	requireCounts := func() {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, `SELECT k.scope, COUNT(*), COALESCE(c.keys, -1), SUM(k.abandoned),
			COALESCE(c.abandoned, -1) FROM idempotency_keys k
			LEFT JOIN idempotency_scopes c ON c.scope = k.scope GROUP BY k.scope`)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var scope string
			var stored, counted, marked, countedMarked int
			require.NoError(t, rows.Scan(&scope, &stored, &counted, &marked, &countedMarked))
			require.Equal(t, stored, counted, "scope %s", scope)
			require.Equal(t, marked, countedMarked, "scope %s: abandoned claims", scope)
		}
		require.NoError(t, rows.Err())
		var orphans int
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_scopes c
			WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.scope = c.scope)`).Scan(&orphans))
		require.Zero(t, orphans, "a scope with no keys has no count")
	}

	for i := range 5 {
		require.Equal(t, idempotency.Claimed, claim("a", fmt.Sprint(i), now, 5, false).Outcome)
	}
	requireCounts()
	require.Equal(t, idempotency.LimitReached, claim("a", "over", now, 5, false).Outcome, "the cap still holds")
	require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: "a", Key: "0", Fingerprint: "fp", State: idempotency.StateDone,
		Status: 200, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	requireCounts()
	require.NoError(t, s.Release(ctx, "a", "1"))
	requireCounts()
	require.Equal(t, idempotency.Claimed, claim("a", "again", now, 5, false).Outcome, "a released key makes room")

	for i := range 4 {
		require.Equal(t, idempotency.Claimed, claim("b", fmt.Sprint(i), now.Add(time.Duration(i)*time.Second), 3, true).Outcome)
	}
	requireCounts()
	var stored int
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT keys FROM idempotency_scopes WHERE scope = 'b'`).Scan(&stored))
	require.Equal(t, 3, stored, "the oldest was evicted")

	require.Equal(t, idempotency.Claimed, claim("a", "late", now.Add(48*time.Hour), 5, false).Outcome, "expired keys are purged")
	requireCounts()
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT keys FROM idempotency_scopes WHERE scope = 'a'`).Scan(&stored))
	require.Equal(t, 1, stored)
}

// TestCapQueriesReadNoScope: at its cap a scope's newly abandoned claims are marked
// through the index of in-progress claims not marked yet, and its oldest live keys read in
// the expiry index's order, so that a caller at the cap (every call refused) cannot make
// each call read its 10,000 keys, or its abandoned claims, inside the store's one write
// transaction. Abandoned claims do not count toward the cap.
func TestCapQueriesReadNoScope(t *testing.T) {
	ctx := context.Background()
	s, _ := openT(t)
	for _, tc := range []struct{ name, query, search string }{
		{"abandoned claims", markAbandoned, "SEARCH idempotency_keys USING COVERING INDEX idempotency_keys_locks (scope=? AND locked_until<?)"},
		{"oldest live keys", oldestLiveKeys, "SEARCH idempotency_keys USING COVERING INDEX idempotency_keys_expiry (scope=? AND abandoned=? AND expires_at>?)"},
		{"expired keys", purgeExpired, "SEARCH idempotency_keys USING COVERING INDEX idempotency_keys_expiry (scope=? AND abandoned=? AND expires_at<?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := explain(t, s, tc.query, 0, "p:x", 1)
			require.Len(t, plan, 1, "one index search, no sort: %q", plan)
			require.Contains(t, plan[0], tc.search)
		})
	}

	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	claim := func(key string, at time.Time) idempotency.Outcome {
		t.Helper()
		res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: "c", Key: key, Fingerprint: "fp", Method: http.MethodPost,
			Path: "/p", Now: at, LockTTL: time.Minute, Limit: 3})
		require.NoError(t, err)
		return res.Outcome
	}
	for i := range 3 {
		require.Equal(t, idempotency.Claimed, claim(fmt.Sprint(i), now))
	}
	require.Equal(t, idempotency.LimitReached, claim("full", now), "three live claims fill the scope")
	later := now.Add(2 * time.Minute)
	require.Equal(t, idempotency.Claimed, claim("after", later), "abandoned claims leave room")
}

// TestRefusalsCountNoAbandonedClaims performs the attack of a caller at its cap that piles
// up abandoned claims, every call refused: the first check at the cap marks the claims
// whose lock ended, each once, and the scope's count holds them, so that the index a
// refusal searches for newly abandoned claims is empty of them and the refusals after it
// read none. A marked claim taken over, answered, released or purged leaves the count.
func TestRefusalsCountNoAbandonedClaims(t *testing.T) {
	ctx := context.Background()
	s, _ := openT(t)
	const scope, limit, piled = "p:attacker", 3, 1000
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	later := now.Add(2 * time.Minute)
	claim := func(key string, at time.Time, lim int) idempotency.Outcome {
		t.Helper()
		res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: scope, Key: key, Fingerprint: "fp", Method: http.MethodPost,
			Path: "/p", Now: at, LockTTL: time.Minute, Limit: lim})
		require.NoError(t, err)
		return res.Outcome
	}
	for i := range piled {
		require.Equal(t, idempotency.Claimed, claim(fmt.Sprint("gone-", i), now, 0))
	}
	for i := range limit {
		require.Equal(t, idempotency.Claimed, claim(fmt.Sprint("live-", i), later, 0))
	}
	counted := func() int {
		t.Helper()
		var n int
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT abandoned FROM idempotency_scopes WHERE scope = ?`, scope).Scan(&n))
		return n
	}
	unmarked := func() int {
		t.Helper()
		var n int
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_keys INDEXED BY idempotency_keys_locks
			WHERE scope = ? AND state = 'in_progress' AND abandoned = 0 AND locked_until <= ?`, scope, nanos(later)).Scan(&n))
		return n
	}
	require.Equal(t, piled, unmarked(), "before the cap is reached nothing is marked")
	require.Equal(t, idempotency.LimitReached, claim("x-0", later, limit), "the abandoned claims leave no room")
	require.Equal(t, piled, counted(), "marked, each once")
	require.Zero(t, unmarked(), "a refusal from now on finds no claim to mark")
	for i := range 5 {
		require.Equal(t, idempotency.LimitReached, claim(fmt.Sprint("x-", i+1), later, limit))
	}
	require.Equal(t, piled, counted())

	require.Equal(t, idempotency.Claimed, claim("gone-0", later, 0), "a marked claim is taken over")
	require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: "gone-1", Fingerprint: "fp",
		State: idempotency.StateDone, Status: http.StatusOK, CreatedAt: later, ExpiresAt: later.Add(time.Hour)}))
	require.NoError(t, s.Release(ctx, scope, "gone-2"))
	require.Equal(t, piled-3, counted())
	require.Equal(t, idempotency.Claimed, claim("late", now.Add(25*time.Hour), 0), "the marked claims expire and are purged")
	require.Zero(t, counted())
}

// TestExpiredKeysPurgedAtTheCap: a claim under its scope's cap purges nothing (readers
// leave expired keys out, and a key's own expired record is written over), so that a fresh
// key costs one statement less; at the cap the expired keys are purged before the live
// ones are counted, so that they make room and the scope stores at most its cap.
func TestExpiredKeysPurgedAtTheCap(t *testing.T) {
	ctx := context.Background()
	s, _ := openT(t)
	const scope, limit = "p:a", 5
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	later := now.Add(2 * time.Hour)
	claim := func(key string, at time.Time) idempotency.ClaimResult {
		t.Helper()
		res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: scope, Key: key, Fingerprint: "fp", Method: http.MethodPost,
			Path: "/p", Now: at, LockTTL: time.Minute, Limit: limit})
		require.NoError(t, err)
		return res
	}
	stored := func() int {
		t.Helper()
		var counted, rows int
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT keys FROM idempotency_scopes WHERE scope = ?`, scope).Scan(&counted))
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_keys WHERE scope = ?`, scope).Scan(&rows))
		require.Equal(t, rows, counted)
		require.LessOrEqual(t, rows, limit, "the scope stores at most its cap")
		return rows
	}
	for _, k := range []string{"a", "b", "c"} {
		require.Equal(t, idempotency.Claimed, claim(k, now).Outcome)
		require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: k, Fingerprint: "fp",
			State: idempotency.StateDone, Status: http.StatusOK, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	}

	res := claim("a", later)
	require.Equal(t, idempotency.Claimed, res.Outcome, "a key whose own record expired is free")
	require.Equal(t, 3, stored(), "under the cap nothing is purged")
	got, err := s.Get(ctx, scope, "a", later)
	require.NoError(t, err)
	require.Equal(t, idempotency.StateInProgress, got.State, "the expired record was written over")
	_, err = s.Get(ctx, scope, "b", later)
	require.ErrorIs(t, err, idempotency.ErrNotFound, "an expired key is not read")
	recs, _, err := s.List(ctx, idempotency.ListParams{Scope: scope, Now: later})
	require.NoError(t, err)
	require.Len(t, recs, 1, "nor listed")

	require.Equal(t, idempotency.Claimed, claim("d", later).Outcome)
	require.Equal(t, idempotency.Claimed, claim("e", later).Outcome)
	require.Equal(t, limit, stored())
	require.Equal(t, idempotency.Claimed, claim("f", later).Outcome, "the expired keys make room at the cap")
	require.Equal(t, 4, stored(), "they were purged")
	require.Equal(t, idempotency.Claimed, claim("g", later).Outcome)
	res = claim("h", later)
	require.Equal(t, idempotency.LimitReached, res.Outcome, "five live keys fill the scope")
	require.True(t, later.Add(inProgressExpiry).Equal(res.Oldest))
}
