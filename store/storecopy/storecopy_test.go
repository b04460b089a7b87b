package storecopy_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore/pgtest"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
	"github.com/gorunner/gorunner/store/sqlitestore"
	"github.com/gorunner/gorunner/store/storecopy/storecopytest"
)

func openSQLite(t *testing.T) storecopytest.TargetStore {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "gorunner.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func openPostgres(t *testing.T) storecopytest.TargetStore {
	s, _ := pgtest.Open(t)
	return s
}

func openRedis(t *testing.T) storecopytest.TargetStore {
	s, _, _ := redistest.Open(t)
	return s
}

// TestCopy runs the suite with every backend as source and every backend as target.
func TestCopy(t *testing.T) {
	stores := []struct {
		name string
		open storecopytest.TargetOpener
	}{
		{"SQLite", openSQLite},
		{"Postgres", openPostgres},
		{"Redis", openRedis},
	}
	for _, from := range stores {
		for _, to := range stores {
			t.Run(from.name+"To"+to.name, func(t *testing.T) {
				t.Parallel()
				storecopytest.Run(t, func(t *testing.T) storecopytest.Store { return from.open(t) }, to.open)
			})
		}
	}
}
