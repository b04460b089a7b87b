package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore/pgtest"
	"github.com/gorunner/gorunner/store/storecopy/storecopytest"
)

// TestCopyCoversEveryTable: every table of the schema is copied or derived.
func TestCopyCoversEveryTable(t *testing.T) {
	ctx := context.Background()
	_, schema := pgtest.Open(t)
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, schema)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	storecopytest.RequireEveryTable(t, tables)
}
