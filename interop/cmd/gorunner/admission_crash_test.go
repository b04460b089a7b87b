package main_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// crashRounds is how many times TestAdmissionCrash kills the server mid-admissions, each
// time after a different number of answered admissions, so the kill lands at many points
// of the admission write while four clients keep admitting.
const crashRounds = 6

// TestAdmissionCrash is admissionCrash on the embedded SQLite file.
func TestAdmissionCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	admissionCrash(t, dir, nil, "sqlite", "file:"+filepath.Join(dir, "gorunner.db"))
}

// TestAdmissionCrashPostgres is admissionCrash on a PostgreSQL schema.
func TestAdmissionCrashPostgres(t *testing.T) {
	t.Parallel()
	store := pgtest.StoreURL(t)
	admissionCrash(t, t.TempDir(), []string{"--store", store}, "pgx", store)
}

// admissionCrash SIGKILLs the real binary (serving dir with args) while clients send keyed
// run requests, over and over, then reads the store (driver, dsn for database/sql): every
// key is either free with no run, or done with its kept answer naming a run that exists,
// never in progress; every run is named by exactly one key; and every 202 a client got is
// kept under its key.
func admissionCrash(t *testing.T, dir string, args []string, driver, dsn string) {
	s := startServe(t, dir, args...)
	token := s.adminToken(t)
	publish(t, s, token, `{"name": "admit", "input": {"type": "object"}, "steps": [{"id": "one", "set": 1}]}`)

	acked := map[string]string{} // key → run ID of a 202 the client got
	var mu sync.Mutex
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	for round := range crashRounds {
		if round > 0 {
			s = startServe(t, dir, args...)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Sprintf("r%d-g%d-%d", round, g, n)
					status, runID, err := submit(s, token, "admit", key, `{}`)
					if err != nil {
						return // the server died under this request
					}
					if status == 202 && runID != "" {
						mu.Lock()
						acked[key] = runID
						mu.Unlock()
					}
				}
			}()
		}
		killAt := answered() + 1 + 3*round
		require.Eventually(t, func() bool { return answered() >= killAt }, time.Minute, time.Millisecond)
		require.NoError(t, s.cmd.Process.Kill())
		_ = s.cmd.Wait()
		close(stop)
		wg.Wait()
	}

	keys, runs := admissionState(t, driver, dsn)
	require.NotEmpty(t, acked, "some admissions were answered before the kills")
	named := map[string]string{}
	for key, k := range keys {
		require.Equal(t, "done", k.state, "key %s: a key is never left in progress", key)
		require.True(t, runs[k.runID], "key %s names run %q, which must exist", key, k.runID)
		require.Empty(t, named[k.runID], "run %s is named by keys %s and %s", k.runID, named[k.runID], key)
		named[k.runID] = key
	}
	for id := range runs {
		require.NotEmpty(t, named[id], "run %s has no key: a run is never admitted without its key", id)
	}
	for key, runID := range acked {
		require.Equal(t, runID, keys[key].runID, "key %s was answered 202; its answer is kept", key)
	}
	t.Logf("%d runs admitted, %d answered before a kill", len(runs), len(acked))
}

// keyState is a key as the store holds it.
type keyState struct{ state, runID string }

// admissionState reads every key and run ID from a SQL store no process serves.
func admissionState(t *testing.T, driver, dsn string) (map[string]keyState, map[string]bool) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	defer db.Close()
	keys := map[string]keyState{}
	rows, err := db.Query(`SELECT key, state, run_id FROM idempotency_keys`)
	require.NoError(t, err)
	for rows.Next() {
		var key string
		var k keyState
		require.NoError(t, rows.Scan(&key, &k.state, &k.runID))
		keys[key] = k
	}
	require.NoError(t, rows.Err())
	runs := map[string]bool{}
	rows, err = db.Query(`SELECT id FROM runs`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		runs[id] = true
	}
	require.NoError(t, rows.Err())
	return keys, runs
}
