package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/stack/stacktest"
)

// TestRunsDelete is `gorunner runs delete`: an ended run is deleted, an active one is
// refused with the server's CONFLICT, an unknown one with NOT_FOUND.
func TestRunsDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := stacktest.New(t, stacktest.Config{})
	srv := httptest.NewUnstartedServer(nil)
	a, err := api.New(api.Deps{Catalog: st.Catalog, Auth: st.Auth, Engine: st.Engine, Idempotency: st.Idempotency},
		&api.Config{PublicURL: "http://" + srv.Listener.Addr().String()})
	require.NoError(t, err)
	srv.Config.Handler = a
	srv.Start()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "admin-token"), []byte(st.AdminToken+"\n"), 0o600))

	def := `{"name": "held", "input": {"type": "object"},
		"steps": [{"id": "wait", "hook": {"token": "held", "timeout": "1h"}}]}`
	wf, err := st.Catalog.Create(ctx, []byte(def))
	require.NoError(t, err)
	_, _, err = st.Catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	res, err := st.Engine.Submit(ctx, runner.SubmitParams{Workflow: "held", Input: []byte(`{}`)})
	require.NoError(t, err)
	id := res.Run.ID

	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := newRootCommand()
		root.SetArgs(append(args, "--url", srv.URL, "--data-dir", dir))
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := cli("runs", "delete", id)
	require.Error(t, err, out)
	require.Contains(t, err.Error()+out, "CONFLICT")

	_, err = st.Engine.Cancel(ctx, id)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		r, err := st.Engine.Get(ctx, id)
		require.NoError(t, err)
		return r.Status.Terminal()
	}, 10*time.Second, 10*time.Millisecond)
	out, err = cli("runs", "delete", id)
	require.NoError(t, err, out)
	require.Contains(t, out, "deleted")
	_, err = st.Engine.Get(ctx, id)
	require.ErrorIs(t, err, runner.ErrNotFound)

	out, err = cli("runs", "delete", id)
	require.Error(t, err, out)
	require.Contains(t, err.Error()+out, "NOT_FOUND")
}
