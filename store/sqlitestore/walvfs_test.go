package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"modernc.org/libc"

	"github.com/stretchr/testify/require"
)

// plainConn opens path through SQLite's own default VFS, as another program (the sqlite3
// shell, an older GoRunner) would.
func plainConn(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	db.SetMaxOpenConns(1)
	return db
}

// crashCopy copies the file at path and its WAL, as a process killed now would leave them
// (no -shm: SQLite recovers the WAL from its frames), opens the copy through SQLite's own
// VFS and checks that it is whole.
func crashCopy(t *testing.T, path string) *sql.DB {
	t.Helper()
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(crashed+suffix, b, 0o600))
	}
	db := plainConn(t, crashed)
	integrityOK(t, db)
	return db
}

// integrityOK checks the whole file through db.
func integrityOK(t *testing.T, db *sql.DB) {
	t.Helper()
	var check string
	require.NoError(t, db.QueryRow(`PRAGMA integrity_check`).Scan(&check))
	require.Equal(t, "ok", check)
}

// countWALWrites counts the writes this VFS makes to WAL files until the test ends. It
// wraps the base VFS's xWrite, which baseWrite reads on each call; other files the base
// serves are not counted. The base's methods are the process's, so a test that counts is
// never parallel.
func countWALWrites(t *testing.T) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	base := walFiles.baseOf()
	orig := base.FxWrite
	write := func(tls *libc.TLS, f, buf uintptr, amount int32, off int64) int32 {
		if walFiles.serves(f) {
			n.Add(1)
		}
		return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&orig)))(tls, f, buf, amount, off)
	}
	*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&base.FxWrite)) = write
	t.Cleanup(func() { base.FxWrite = orig })
	return &n
}

// TestCommitWritesWALOnce: a commit of several pages reaches the WAL in one write, and
// a reader through SQLite's own VFS (another program) sees each commit as soon as it is
// answered.
//
// Not parallel: it counts the process's WAL writes.
func TestCommitWritesWALOnce(t *testing.T) {
	s, path := openT(t)
	ctx := context.Background()
	other := plainConn(t, path)
	require.NoError(t, s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE INDEX test_keys_rev ON test_keys (substr(k, 3), k)`)
		return err
	}))
	walWrites := countWALWrites(t)
	for i := range 20 {
		before := walWrites.Load()
		require.NoError(t, s.write(ctx, insertKey(ctx, s, fmt.Sprint("k-", i))))
		require.Equal(t, int64(1), walWrites.Load()-before, "a commit of a table and an index page is one write")
		var n int
		require.NoError(t, other.QueryRow(`SELECT count(*) FROM test_keys`).Scan(&n))
		require.Equal(t, i+1, n, "another program sees the commit")
	}
	integrityOK(t, other)
}

// TestRolledBackFrames: a transaction whose pages spilled to the WAL before its end, then
// rolled back, leaves nothing behind: another program commits at the same WAL offsets, then
// the store again, and the file is whole, with only the committed rows.
func TestRolledBackFrames(t *testing.T) {
	t.Parallel()
	s, path := openT(t)
	ctx := context.Background()
	other := plainConn(t, path)
	blob := strings.Repeat("x", 3000)
	spill := func(tx *sql.Tx) error {
		// A tiny cache spills dirty pages to the WAL in the middle of the transaction.
		if _, err := tx.Exec(`PRAGMA cache_size = 2`); err != nil {
			return err
		}
		for i := range 8 {
			if _, err := tx.Exec(`INSERT INTO test_keys (k) VALUES (?)`, fmt.Sprint("spilled-", i, blob)); err != nil {
				return err
			}
		}
		return errBoom
	}
	for round := range 3 {
		require.ErrorIs(t, s.write(ctx, spill), errBoom)
		_, err := other.Exec(`INSERT INTO test_keys (k) VALUES (?)`, fmt.Sprint("other-", round, blob))
		require.NoError(t, err)
		require.NoError(t, s.write(ctx, insertKey(ctx, s, fmt.Sprint("store-", round))))
	}
	integrityOK(t, other)
	var spilled, kept int
	require.NoError(t, other.QueryRow(`SELECT count(*) FROM test_keys WHERE k LIKE 'spilled-%'`).Scan(&spilled))
	require.NoError(t, other.QueryRow(`SELECT count(*) FROM test_keys WHERE k NOT LIKE 'spilled-%'`).Scan(&kept))
	require.Zero(t, spilled)
	require.Equal(t, 6, kept)

	reopened, err := Open(ctx, path)
	require.NoError(t, err)
	defer func() { require.NoError(t, reopened.Close()) }()
	for round := range 3 {
		require.True(t, committed(t, reopened, fmt.Sprint("store-", round)))
	}
}

// TestCrashAfterRewrittenFrames: a transaction that writes a page to the WAL twice (spilled,
// then changed again) has SQLite rewrite its frames in place and their checksums after the
// commit frame; a copy of the file and its WAL taken right after the commit, as a crash
// would leave them, recovers the whole transaction.
func TestCrashAfterRewrittenFrames(t *testing.T) {
	t.Parallel()
	s, path := openT(t)
	ctx := context.Background()
	blob := strings.Repeat("y", 3000)
	require.NoError(t, s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `PRAGMA cache_size = 2`); err != nil {
			return err
		}
		for i := range 8 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO test_keys (k) VALUES (?)`, fmt.Sprint(i, "-", blob)); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE test_keys SET k = 'v2-' || k`)
		return err
	}))

	recovered := crashCopy(t, path)
	var n int
	require.NoError(t, recovered.QueryRow(`SELECT count(*) FROM test_keys WHERE k LIKE 'v2-%'`).Scan(&n))
	require.Equal(t, 8, n, "the committed transaction is in the WAL as a crash leaves it")
}

// TestWritersInTwoProcesses: this process writes through the store (and its VFS) all the
// while another process writes to the same file through SQLite's own VFS, each commit a
// few pages; every commit of both is there, and the file is whole.
func TestWritersInTwoProcesses(t *testing.T) {
	const rows = 200
	if path := os.Getenv("GORUNNER_TEST_PLAIN_WRITER"); path != "" {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)&_txlock=immediate")
		require.NoError(t, err)
		defer db.Close()
		for i := range rows {
			_, err := db.Exec(`INSERT INTO test_keys (k) VALUES (?)`, fmt.Sprint("plain-", i, strings.Repeat("p", 2000)))
			require.NoError(t, err)
		}
		return
	}
	t.Parallel()
	s, path := openT(t)
	ctx := context.Background()
	other := exec.Command(os.Args[0], "-test.run=^TestWritersInTwoProcesses$", "-test.count=1")
	other.Env = append(os.Environ(), "GORUNNER_TEST_PLAIN_WRITER="+path)
	out := &bytes.Buffer{}
	other.Stdout, other.Stderr = out, out
	require.NoError(t, other.Start())
	done := make(chan error, 1)
	go func() { done <- other.Wait() }()
	// This process writes all along, until the other has written all its rows.
	written := 0
	for running := true; running || written < rows; written++ {
		require.NoError(t, s.write(ctx, insertKey(ctx, s, fmt.Sprint("store-", written, strings.Repeat("s", 2000)))))
		select {
		case err := <-done:
			require.NoError(t, err, "%s", out)
			running = false
		default:
		}
	}

	check := plainConn(t, path)
	integrityOK(t, check)
	for prefix, want := range map[string]int{"plain-": rows, "store-": written} {
		var n int
		require.NoError(t, check.QueryRow(`SELECT count(*) FROM test_keys WHERE k LIKE ?`, prefix+"%").Scan(&n))
		require.Equal(t, want, n, prefix)
	}
}

// TestCrashCopiesHoldWhatCommitted runs transactions of many shapes through the store (one
// row or many, small rows or pages long, some spilling to the WAL before their end, some
// changing spilled pages again, some rolled back) and after each takes a copy of the file
// and its WAL, as a crash at that moment would leave them: every copy recovers exactly
// the rows committed so far.
func TestCrashCopiesHoldWhatCommitted(t *testing.T) {
	t.Parallel()
	s, path := openT(t)
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(13, 1))
	want := map[string]bool{}
	for round := range 40 {
		rows := 1 + rnd.IntN(12)
		size := []int{10, 500, 3000, 9000}[rnd.IntN(4)]
		cache := []int{2, 2000}[rnd.IntN(2)]
		rewrite, fail := rnd.IntN(3) == 0, rnd.IntN(4) == 0
		var keys []string
		for i := range rows {
			keys = append(keys, fmt.Sprint(round, "-", i, "-", strings.Repeat("z", size)))
		}
		err := s.write(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, fmt.Sprint(`PRAGMA cache_size = `, cache)); err != nil {
				return err
			}
			for _, k := range keys {
				if _, err := tx.ExecContext(ctx, `INSERT INTO test_keys (k) VALUES (?)`, k); err != nil {
					return err
				}
			}
			if rewrite {
				if _, err := tx.ExecContext(ctx, `UPDATE test_keys SET k = k || 'x' WHERE k LIKE ?`, fmt.Sprint(round, "-%")); err != nil {
					return err
				}
			}
			if fail {
				return errBoom
			}
			return nil
		})
		if fail {
			require.ErrorIs(t, err, errBoom)
		} else {
			require.NoError(t, err)
			for _, k := range keys {
				if rewrite {
					k += "x"
				}
				want[k] = true
			}
		}

		recovered := crashCopy(t, path)
		got := map[string]bool{}
		rs, err := recovered.Query(`SELECT k FROM test_keys`)
		require.NoError(t, err)
		for rs.Next() {
			var k string
			require.NoError(t, rs.Scan(&k))
			got[k] = true
		}
		require.NoError(t, rs.Err())
		require.NoError(t, rs.Close())
		require.Equal(t, len(want), len(got), "round %d: rows %d, size %d, cache %d, rewrite %v, fail %v", round, rows, size, cache, rewrite, fail)
		require.Equal(t, want, got, "round %d", round)
	}
}
