package pgstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// TestMigrateOnce: processes opening one fresh schema at once migrate it once (each
// migration recorded once, no error from a table created twice); one opening it later
// finds it current.
func TestMigrateOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := pgstore.OpenConfig(ctx, pgtest.Config(t, schema))
			if errs[i] = err; err == nil {
				errs[i] = s.Close()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	s := pgtest.OpenIn(t, schema)
	require.NoError(t, s.Ping(ctx))

	conn, err := pgx.ConnectConfig(ctx, pgtest.Config(t, schema).ConnConfig)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n, distinct int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct))
	require.Equal(t, distinct, n)
	require.Positive(t, n)
}

// TestOpenWithoutSchema: a search_path naming no schema that exists is refused at Open,
// with what to do, rather than tables made somewhere else.
func TestOpenWithoutSchema(t *testing.T) {
	t.Parallel()
	cfg := pgtest.Config(t, "gorunner_test_missing")
	_, err := pgstore.OpenConfig(context.Background(), cfg)
	require.ErrorContains(t, err, "create it first")
}
