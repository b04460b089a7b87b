package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/sqlitestore"
	"github.com/gorunner/gorunner/store/storecopy/storecopytest"
)

// TestCopyCoversEveryTable: every table of the schema is copied or derived.
func TestCopyCoversEveryTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gorunner.db")
	s, err := sqlitestore.Open(context.Background(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	require.NoError(t, err)
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	storecopytest.RequireEveryTable(t, tables)
}
