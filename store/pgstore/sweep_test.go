package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/store/pgstore"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// TestSweepExpiredKeys: the sweep deletes every key expired by its time, in every scope,
// one past a statement's batch taking a second statement, and leaves live keys and the
// scopes' counts right.
func TestSweepExpiredKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, schema := pgtest.Open(t)
	conn, err := pgx.ConnectConfig(ctx, pgtest.Config(t, schema).ConnConfig)
	require.NoError(t, err)
	defer conn.Close(ctx)
	now := time.Now().UTC()
	_, err = conn.Exec(ctx, `INSERT INTO idempotency_keys (scope, key, fingerprint, state, expires_at)
		SELECT 's' || (i % 3), 'k' || i, 'fp', 'done', $1 FROM generate_series(1, $2) AS i`,
		now.Add(-time.Second).UnixNano(), pgstore.SweepBatch+1)
	require.NoError(t, err)
	live := &idempotency.Record{Scope: "s0", Key: "live", Fingerprint: "fp", State: idempotency.StateDone,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	require.NoError(t, s.Complete(ctx, live))

	n, err := pgstore.SweepExpiredKeys(s, ctx, now)
	require.NoError(t, err)
	require.Equal(t, pgstore.SweepBatch+1, n)
	_, err = s.Get(ctx, "s0", "live", now)
	require.NoError(t, err, "a live key stays")
	var stored int
	require.NoError(t, conn.QueryRow(ctx, `SELECT sum(keys) FROM idempotency_scopes`).Scan(&stored))
	require.Equal(t, 1, stored, "the scopes count only the live key")
}
