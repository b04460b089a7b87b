package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/stack/stacktest"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// shortBusy is the busy timeout of a store whose lock a test holds: long enough for the
// store to wait, short enough not to slow the test.
const shortBusy = 20 * time.Millisecond

// holdLock takes the write lock of the SQLite file at path (BEGIN IMMEDIATE) on a handle
// of its own, as another process would, until release (or the end of the test).
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	require.NoError(t, err)
	release = sync.OnceFunc(func() {
		_, err := conn.ExecContext(ctx, `ROLLBACK`)
		require.NoError(t, err)
		require.NoError(t, errors.Join(conn.Close(), db.Close()))
	})
	t.Cleanup(release)
	return release
}

// TestLockHeldPastBusyTimeoutIsUnreachable: a write that finds the lock held by another
// process past the busy timeout fails with store.ErrUnreachable, and succeeds once the
// lock is free; reads go on meanwhile (WAL), and the store's other errors (not found,
// conflict) are not taken for an outage.
func TestLockHeldPastBusyTimeoutIsUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	s, err := sqlitestore.OpenBusy(ctx, path, shortBusy)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	w := func() *catalog.Workflow {
		return &catalog.Workflow{ID: "wf_1", Name: "greet", Rev: 1, Definition: []byte(`{"name":"greet","steps":[{"id":"s"}]}`),
			WebhookDigest: "wh_1", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	}

	release := holdLock(t, path)
	require.ErrorIs(t, s.CreateWorkflow(ctx, w()), store.ErrUnreachable)
	require.NoError(t, s.Ping(ctx))
	_, err = s.GetWorkflow(ctx, "greet")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.NotErrorIs(t, err, store.ErrUnreachable)

	release()
	require.NoError(t, s.CreateWorkflow(ctx, w()))
	err = s.CreateWorkflow(ctx, w())
	require.ErrorIs(t, err, catalog.ErrConflict)
	require.NotErrorIs(t, err, store.ErrUnreachable)
}

// TestNotADatabaseIsNotUnreachable: a file that is not a database is a fault retrying
// cannot mend, not an outage.
func TestNotADatabaseIsNotUnreachable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("not a database ", 512)), 0o600))
	_, err := sqlitestore.Open(context.Background(), path)
	require.Error(t, err)
	require.NotErrorIs(t, err, store.ErrUnreachable)
}

// TestLockedStoreAnswersUnavailable: while another process holds the SQLite file's write
// lock past the busy timeout, a write through the API answers 503 UNAVAILABLE with
// Retry-After, not 500.
func TestLockedStoreAnswersUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	st := stacktest.New(t, stacktest.Config{Path: path, Open: func(ctx context.Context, path string) (*sqlitestore.Store, error) {
		return sqlitestore.OpenBusy(ctx, path, shortBusy)
	}})
	srv := httptest.NewUnstartedServer(nil)
	a, err := api.New(api.Deps{Catalog: st.Catalog, Auth: st.Auth, Engine: st.Engine, Idempotency: st.Idempotency},
		&api.Config{Ready: st.Store.Ping, PublicURL: "http://" + srv.Listener.Addr().String()})
	require.NoError(t, err)
	srv.Config = api.NewHTTPServer(a, nil)
	srv.Start()
	t.Cleanup(srv.Close)

	holdLock(t, path)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/workflows", strings.NewReader(`{"name":"greet",
		"input":{"type":"object"},"steps":[{"id":"greet","set":{"message":"hi"}}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+st.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
}
