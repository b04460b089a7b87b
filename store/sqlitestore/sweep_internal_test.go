package sqlitestore

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// TestSweepKeys: a sweep deletes every expired key, in every scope, in transactions of at
// most its batch, and keeps the live keys, whose answers still replay.
func TestSweepKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openT(t)
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	keep := func(scope, key string, expires time.Time) {
		t.Helper()
		require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: scope, Key: key, Fingerprint: "fp",
			Method: http.MethodPost, Path: "/p", State: idempotency.StateDone, Status: http.StatusCreated,
			Body: []byte(key), CreatedAt: expires.Add(-time.Hour), ExpiresAt: expires}))
	}
	stored := func() (keys, scopes int) {
		t.Helper()
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_keys`).Scan(&keys))
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_scopes`).Scan(&scopes))
		return keys, scopes
	}
	const expired = 10
	for i := range expired {
		keep(fmt.Sprint("p:", i%3), fmt.Sprint("old", i), now.Add(-time.Duration(i)*time.Second))
	}
	keep("p:gone", "old", now)
	keep("p:0", "live", now.Add(time.Nanosecond))
	keep("p:1", "live", now.Add(time.Hour))

	const batch = 3
	n, next, more, err := sweepKeys(ctx, s.q(), now, "", batch)
	require.NoError(t, err)
	require.Equal(t, batch, n, "one transaction deletes at most its batch")
	require.True(t, more)
	require.Equal(t, "p:0", next, "the next batch goes on in the scope the last one stopped in")
	keys, _ := stored()
	require.Equal(t, expired+3-batch, keys)

	n, err = s.sweepExpiredKeys(ctx, now)
	require.NoError(t, err)
	require.Equal(t, expired+1-batch, n)
	keys, scopes := stored()
	require.Equal(t, 2, keys, "only the live keys are left")
	require.Equal(t, 2, scopes, "a scope left without keys is not counted")

	for _, scope := range []string{"p:0", "p:1"} {
		res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: scope, Key: "live", Fingerprint: "fp",
			Method: http.MethodPost, Path: "/p", Now: now, LockTTL: time.Minute, Limit: 5})
		require.NoError(t, err)
		require.Equal(t, idempotency.Existing, res.Outcome, scope)
		require.Equal(t, "live", string(res.Record.Body), "the live key replays")
	}
	n, err = s.sweepExpiredKeys(ctx, now)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestSweepKeysScopePages: a sweep walks scopes a batch at a time, also when the batches
// find no expired key, and reaches the last scope.
func TestSweepKeysScopePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openT(t)
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	const scopes = 7
	for i := range scopes {
		expires := now.Add(time.Hour)
		if i == scopes-1 {
			expires = now
		}
		require.NoError(t, s.Complete(ctx, &idempotency.Record{Scope: fmt.Sprint("w:", i), Key: "k", Fingerprint: "fp",
			State: idempotency.StateDone, Status: http.StatusOK, CreatedAt: now, ExpiresAt: expires}))
	}
	from, swept := "", 0
	for more := true; more; {
		var n int
		var err error
		n, from, more, err = sweepKeys(ctx, s.q(), now, from, 3)
		require.NoError(t, err)
		swept += n
	}
	require.Equal(t, 1, swept, "the last scope's expired key")
}

// TestCloseStopsSweeping: Close ends the store's sweeps of expired keys.
func TestCloseStopsSweeping(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sweep.db"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	select {
	case <-s.swept:
	default:
		t.Fatal("the sweeps go on after Close")
	}
}
