package storecopy_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore/pgtest"
	"github.com/gorunner/gorunner/store/sqlitestore"
	"github.com/gorunner/gorunner/store/storecopy/storecopytest"
)

func openSQLite(t *testing.T) storecopytest.Store {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "gorunner.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func openPostgres(t *testing.T) storecopytest.Store {
	s, _ := pgtest.Open(t)
	return s
}

// TestCopy runs the suite with every backend as source and as target.
func TestCopy(t *testing.T) {
	backends := []struct {
		name string
		open storecopytest.Opener
	}{
		{"SQLite", openSQLite},
		{"Postgres", openPostgres},
	}
	for _, from := range backends {
		for _, to := range backends {
			t.Run(from.name+"To"+to.name, func(t *testing.T) {
				t.Parallel()
				storecopytest.Run(t, from.open, to.open)
			})
		}
	}
}
