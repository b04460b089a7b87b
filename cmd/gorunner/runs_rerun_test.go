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

// TestRunsRerunFromFailure is `gorunner runs rerun --from-failure`: a failed run is rerun
// from its failure (a new run, rerunOf set, its completed step taken over); a run that did
// not fail is refused with the server's VALIDATION_ERROR.
func TestRunsRerunFromFailure(t *testing.T) {
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

	def := `{"name": "half", "input": {"type": "object"}, "steps": [{"id": "first", "set": 1},
		{"id": "boom", "if": "${{ input.fail }}", "fail": {"message": "asked", "code": "ASKED"}}]}`
	wf, err := st.Catalog.Create(ctx, []byte(def))
	require.NoError(t, err)
	_, _, err = st.Catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	ended := func(input string) *runner.Run {
		res, err := st.Engine.Submit(ctx, runner.SubmitParams{Workflow: "half", Input: []byte(input)})
		require.NoError(t, err)
		r, err := st.Engine.Wait(ctx, res.Run.ID, 10*time.Second)
		require.NoError(t, err)
		return r
	}
	failed, done := ended(`{"fail": true}`), ended(`{}`)
	require.Equal(t, runner.StatusFailed, failed.Status)

	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := newRootCommand()
		root.SetArgs(append(args, "--url", srv.URL, "--data-dir", dir))
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := cli("runs", "rerun", done.ID, "--from-failure")
	require.Error(t, err, out)
	require.Contains(t, err.Error()+out, "VALIDATION_ERROR")

	_, _ = cli("runs", "rerun", failed.ID, "--from-failure")
	runs, _, err := st.Engine.List(ctx, runner.ListRunsParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, runs, 3)
	require.Equal(t, failed.ID, runs[0].RerunOf)
	require.Equal(t, failed.Steps[0].StartedAt, runs[0].Steps[0].StartedAt, "the completed step is taken over")
}
