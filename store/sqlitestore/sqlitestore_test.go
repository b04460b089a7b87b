package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/sqlitestore"
	"github.com/gorunner/gorunner/store/storetest"
)

func open(t testing.TB, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func fresh(t testing.TB) *sqlitestore.Store {
	return open(t, filepath.Join(t.TempDir(), "gorunner.db"))
}

// TestContracts runs every store contract's conformance suite on this backend.
func TestContracts(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Backend { return fresh(t) })
}

// TestTwoProcessesClaim opens one file twice, as two processes would, and has both claim
// the same due runs at once: no run may be leased to both.
func TestTwoProcessesClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	stores := []*sqlitestore.Store{open(t, path), open(t, path)}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	const runs = 40
	for i := range runs {
		r := &runner.Run{ID: fmt.Sprintf("run-%02d", i), WorkflowID: "wf", Workflow: "wf",
			Environment: runner.EnvProduction, Status: runner.StatusPending, CreatedAt: now, WakeAt: now}
		require.NoError(t, runnertest.Create(ctx, stores[i%2], r, nil))
	}

	const workers = 4
	got := make([][]string, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			s := stores[w%2]
			for range runs {
				claimed, err := s.ClaimRuns(ctx,
					runner.ClaimRunsParams{Owner: fmt.Sprint("owner-", w), Now: now, LeaseUntil: now.Add(time.Hour), Limit: 3})
				if err != nil || len(claimed) == 0 {
					errs[w] = err
					return
				}
				for _, c := range claimed {
					got[w] = append(got[w], c.Run.ID)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for w := range workers {
		require.NoError(t, errs[w])
		for _, id := range got[w] {
			seen[id]++
		}
	}
	require.Len(t, seen, runs)
	for id, n := range seen {
		require.Equalf(t, 1, n, "run %s leased %d times", id, n)
	}
}

// TestReopen checks that migrations are idempotent: reopening a file (also from two
// stores at once) keeps its data and applies nothing twice.
func TestReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reopen.db")
	first, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, first.CreateToken(ctx, &auth.Token{ID: "t1", Name: "admin", Hash: []byte("h")}))
	require.NoError(t, first.Close())

	var wg sync.WaitGroup
	stores := make([]*sqlitestore.Store, 2)
	errs := make([]error, 2)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = sqlitestore.Open(ctx, path) })
	}
	wg.Wait()
	for i, s := range stores {
		require.NoError(t, errs[i])
		require.NoError(t, s.Ping(ctx))
		n, err := s.CountTokens(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.NoError(t, s.Close())
	}
}

// TestConcurrentFirstOpen has two stores create the schema of a new file at once.
func TestConcurrentFirstOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			s, err := sqlitestore.Open(ctx, path)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	v, err := open(t, path).CatalogVersion(ctx)
	require.NoError(t, err)
	require.Zero(t, v, "the schema was created once")
}

// TestConnectionsBeforeHostsAreBoundToNoHost rolls a file back to the schema before
// connections had hosts, stores a connection the old way, and checks that migrating binds
// it to no host (so its secret is sent nowhere) instead of to every host.
func TestConnectionsBeforeHostsAreBoundToNoHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	for _, stmt := range []string{
		`ALTER TABLE connections DROP COLUMN hosts`,
		`DELETE FROM schema_migrations WHERE name = '0002_connection_hosts.sql'`,
		`INSERT INTO connections (id, name, type, sealed, created_at) VALUES ('c-old', 'old', 'bearer', x'00', 1)`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	require.NoError(t, db.Close())

	c, err := open(t, path).GetConnection(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, []string{}, c.Hosts)
}
