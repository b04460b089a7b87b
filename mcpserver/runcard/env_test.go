package runcard_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/examples"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/mcpserver/runcard"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/stack/stacktest"
)

// sleepyYAML takes three seconds (a durable sleep), longer than its tool call waits: the call
// answers at once that the run sleeps (a sleep past the wait is not waited for).
const sleepyYAML = `name: sleepy
title: Take a nap
toolTimeout: 1s
input: {type: object}
steps:
  - id: nap
    sleep: {duration: 3s}
  - id: wake
    set: {rested: true}
`

// relayYAML runs sleepy as a child and answers with its output: the run is running (not
// waiting) while the child sleeps, longer than its tool call waits.
const relayYAML = `name: relay
title: Hand the nap to a child run
toolTimeout: 1s
input: {type: object}
steps:
  - id: child
    workflow: {name: sleepy}
`

// env is a GoRunner HTTP face (REST and /mcp) over a fresh SQLite store with greet,
// approval (the examples), sleepy and relay published, and under /host/ the card's test host page
// (and the card, for the host page scripted without a server).
type env struct {
	url   string
	token string
	// engine is the engine behind the server, for what the test checks in the store.
	engine *runner.Engine
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	s := stacktest.New(t, stacktest.Config{Runner: runner.Config{PollInterval: 20 * time.Millisecond}})
	for _, def := range [][]byte{mustRead(t, examples.Workflows(), "greet.yaml"), mustRead(t, examples.Workflows(), "approval.yaml"), []byte(sleepyYAML), []byte(relayYAML)} {
		w, err := s.Catalog.Create(ctx, def)
		require.NoError(t, err)
		_, _, err = s.Catalog.Publish(ctx, w.ID, auth.Local())
		require.NoError(t, err)
	}
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String()
	m, err := mcpserver.New(mcpserver.Deps{Catalog: s.Catalog, Engine: s.Engine, Idempotency: s.Idempotency},
		&mcpserver.Config{PublicURL: url})
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	a, err := api.New(api.Deps{Catalog: s.Catalog, Auth: s.Auth, Engine: s.Engine, Idempotency: s.Idempotency},
		&api.Config{MCP: m.HTTPHandler(), PublicURL: url})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/host/", http.StripPrefix("/host/", http.FileServerFS(os.DirFS("testdata"))))
	mux.HandleFunc("/host/card.html", func(w http.ResponseWriter, _ *http.Request) { // for the scripted host
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, runcard.HTML)
	})
	mux.Handle("/", a)
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
	return &env{url: url, token: s.AdminToken, engine: s.Engine}
}

func mustRead(t *testing.T, fsys fs.FS, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	require.NoError(t, err)
	return b
}
