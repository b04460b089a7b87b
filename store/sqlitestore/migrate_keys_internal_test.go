package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// TestMigratedKeysCountedThroughEveryTransition opens a database at the schema before
// migration 14, holding keys in every state (answered, taken, claimed, abandoned, expired)
// in several scopes, and drives it through random claims (free, at the cap refused or
// evicting, taking over abandoned claims), answers, releases, and time passing (locks
// ending, keys expiring and purged): after each, every scope's counts of keys and of
// claims marked abandoned equal what it stores, only abandoned claims are marked, and each
// claim's outcome is the one its scope's live keys, counted one by one, call for.
func TestMigratedKeysCountedThroughEveryTransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v13.db")
	ms, err := loadMigrations()
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	require.NoError(t, err)
	for _, m := range ms[:13] {
		_, err = db.ExecContext(ctx, m.sql)
		require.NoError(t, err, m.name)
		_, err = db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.version, m.name)
		require.NoError(t, err)
	}
	require.Equal(t, 13, ms[12].version)

	start := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	const lockTTL, ttl = time.Minute, time.Hour
	scopes := []string{"p:a", "p:b", "p:c"}
	for i, scope := range scopes {
		for j := range 6 {
			key, at := fmt.Sprint("old-", j), start.Add(-time.Duration(j)*30*time.Second)
			state, locked, expires := idempotency.StateInProgress, at.Add(lockTTL), at.Add(inProgressExpiry)
			switch (i + j) % 5 {
			case 0:
				state, expires = idempotency.StateDone, at.Add(ttl)
			case 1:
				state, expires = idempotency.StateTaken, at.Add(ttl)
			case 2: // claimed, or abandoned when its lock ended before start
			case 3:
				locked = at.Add(-lockTTL) // abandoned
			case 4:
				state, expires = idempotency.StateDone, start.Add(-time.Second) // expired, not purged yet
			}
			_, err = db.ExecContext(ctx, `INSERT INTO idempotency_keys (`+keyCols+`)
				VALUES (?, ?, 'fp', 'POST', '/p', '', ?, 200, NULL, NULL, ?, ?, ?)`,
				scope, key, state, nanos(at), nanos(locked), nanos(expires))
			require.NoError(t, err)
		}
	}
	require.NoError(t, db.Close())

	s, err := Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	now := start
	requireCounts := func(step string) {
		t.Helper()
		var drift, orphans, wrongMarks int
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT k.scope FROM idempotency_keys k
			LEFT JOIN idempotency_scopes c ON c.scope = k.scope GROUP BY k.scope
			HAVING COUNT(*) != COALESCE(MAX(c.keys), -1) OR SUM(k.abandoned) != COALESCE(MAX(c.abandoned), -1))`).Scan(&drift))
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_scopes c
			WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.scope = c.scope)`).Scan(&orphans))
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_keys
			WHERE abandoned != 0 AND (abandoned != 1 OR state != 'in_progress' OR locked_until > ?)`, nanos(now)).Scan(&wrongMarks))
		require.Zero(t, drift, "%s: a scope's counts differ from its keys", step)
		require.Zero(t, orphans, "%s: a scope without keys is counted", step)
		require.Zero(t, wrongMarks, "%s: a key marked abandoned is not an abandoned claim", step)
	}
	liveKeys := func(scope string) int {
		t.Helper()
		var n int
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_keys WHERE scope = ?2 AND `+liveKey,
			nanos(now), scope).Scan(&n))
		return n
	}
	isLive := func(scope, key string) bool {
		t.Helper()
		r, err := s.Get(ctx, scope, key, now)
		return err == nil && !r.Abandoned(now)
	}
	requireCounts("migrated")

	rnd := rand.New(rand.NewPCG(13, 14))
	for i := range 600 {
		scope, key := scopes[rnd.IntN(len(scopes))], fmt.Sprint("k-", rnd.IntN(4))
		var step string
		switch op := rnd.IntN(10); {
		case op < 4:
			limit, evict := rnd.IntN(4), rnd.IntN(2) == 0
			step = fmt.Sprintf("%d: claim %s/%s limit %d evict %t", i, scope, key, limit, evict)
			existing, live := isLive(scope, key), liveKeys(scope)
			res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: scope, Key: key, Fingerprint: "fp",
				Method: http.MethodPost, Path: "/p", Now: now, LockTTL: lockTTL, Limit: limit, EvictOldest: evict})
			require.NoError(t, err, step)
			want := idempotency.Claimed
			switch {
			case existing:
				want = idempotency.Existing
			case limit > 0 && live >= limit && !evict:
				want = idempotency.LimitReached
			}
			require.Equal(t, want, res.Outcome, step)
			if want == idempotency.Claimed && limit > 0 {
				require.LessOrEqual(t, liveKeys(scope), limit, step)
			}
		case op < 6:
			state := idempotency.StateDone
			if rnd.IntN(2) == 0 {
				state = idempotency.StateTaken
			}
			step = fmt.Sprintf("%d: answer %s/%s %s", i, scope, key, state)
			require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: key, Fingerprint: "fp",
				State: state, Status: http.StatusOK, CreatedAt: now, ExpiresAt: now.Add(ttl)}), step)
		case op < 8:
			step = fmt.Sprintf("%d: release %s/%s", i, scope, key)
			require.NoError(t, s.Release(ctx, scope, key), step)
		default:
			d := time.Duration(rnd.IntN(90)) * time.Second
			switch rnd.IntN(20) {
			case 0:
				d = ttl // answers expire
			case 1:
				d = inProgressExpiry // so do claims
			}
			now = now.Add(d)
			step = fmt.Sprintf("%d: %s later", i, d)
		}
		requireCounts(step)
	}
}
