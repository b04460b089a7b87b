package sqlitestore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// TestIOErrorIsUnreachable: once the database's file cannot be read (every descriptor
// this process holds on it and its WAL now reads as a write-only /dev/null, as a failing
// disk would), Ping, reads and writes fail with store.ErrUnreachable: Ping reads the
// file, so readiness goes red with it.
func TestIOErrorIsUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Ping(ctx))
	otherWrite(t, path) // the store's connections must read the file again
	breakFiles(t, path)

	require.ErrorIs(t, s.Ping(ctx), store.ErrUnreachable)
	_, err = s.CatalogVersion(ctx)
	require.ErrorIs(t, err, store.ErrUnreachable)
	require.ErrorIs(t, s.DeleteToken(ctx, "tok_1"), store.ErrUnreachable)
}

// otherWrite changes the database at path from a handle of its own, as another process
// would, which makes every connection of the store drop the pages it holds.
func otherWrite(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`UPDATE counters SET value = value + 1 WHERE name = 'catalog_version'`)
	require.NoError(t, err)
}

// breakFiles points every descriptor this process holds on the file at path or its WAL
// at a write-only /dev/null, so that reading them fails (EBADF, SQLITE_IOERR_READ).
func breakFiles(t *testing.T, path string) {
	t.Helper()
	real, err := filepath.EvalSymlinks(path)
	require.NoError(t, err)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer null.Close()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	broken := 0
	for _, fd := range fds {
		target, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err != nil || (target != real && target != real+"-wal") {
			continue
		}
		n, err := strconv.Atoi(fd.Name())
		require.NoError(t, err)
		require.NoError(t, syscall.Dup3(int(null.Fd()), n, syscall.O_CLOEXEC))
		broken++
	}
	require.NotZero(t, broken)
}
