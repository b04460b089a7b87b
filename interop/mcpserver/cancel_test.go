package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
)

// gate is an HTTP endpoint that holds every request until it is opened, so that a run
// stays running in its http step for as long as a test needs.
type gate struct {
	srv     *httptest.Server
	entered chan struct{}
	open    func()
}

func newGate(t *testing.T) *gate {
	opened := make(chan struct{})
	g := &gate{entered: make(chan struct{}, 1), open: sync.OnceFunc(func() { close(opened) })}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-opened:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true}`))
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(g.srv.Close) // registered before the fixture, so it runs after the engine stops
	t.Cleanup(g.open)
	return g
}

// slowDef waits at g, then for a payload on the hook "slow".
func slowDef(g *gate) string {
	return fmt.Sprintf(`{"name":"slow","input":{"type":"object"},"steps":[
		{"id":"gate","http":{"url":%q}},
		{"id":"confirm","hook":{"token":"slow"}},
		{"id":"done","set":"${{ steps.confirm.output.ok }}"}]}`, g.srv.URL)
}

// toolCalls reads the server's call counter of one tool and outcome.
func toolCalls(t *testing.T, reg prometheus.Gatherer, tool, outcome string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var n float64
	for _, mf := range families {
		if mf.GetName() != "gorunner_mcp_tool_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["tool"] == tool && labels["outcome"] == outcome {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// cancelledCalls are the two ways a client gives up on a tool call while the server waits.
var cancelledCalls = []struct {
	name string
	call func(ctx context.Context, f *fixture, s *mcp.ClientSession) error
}{
	{"notifications/cancelled", func(ctx context.Context, _ *fixture, s *mcp.ClientSession) error {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		return err
	}},
	{"dropped stream", func(ctx context.Context, f *fixture, _ *mcp.ClientSession) error {
		res, err := f.post(ctx, statelessRequest(1, "tools/call", "slow", map[string]any{"name": "slow", "arguments": map[string]any{}}))
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		return err
	}},
}

func TestCancelledCallStopsTheWaitNotTheRun(t *testing.T) {
	for _, tc := range cancelledCalls {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(t)
			reg := prometheus.NewPedanticRegistry()
			f := newFixtureConfig(t, &mcpserver.Config{Registerer: reg}, slowDef(g))
			s, _ := f.connect("")

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- tc.call(ctx, f, s) }()
			select {
			case <-g.entered: // the run is in its http step, the call waits on it
			case err := <-done:
				require.FailNow(t, "the call ended before its run reached the gate", "%v", err)
			}
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
			require.Eventually(t, func() bool { return toolCalls(t, reg, "slow", "error") == 1 }, 10*time.Second, 10*time.Millisecond,
				"the server stops waiting long before the 30s tool timeout")

			runs, _, err := f.engine.List(context.Background(), runnerAll())
			require.NoError(t, err)
			require.Len(t, runs, 1)
			id := runs[0].ID
			require.Equal(t, runner.StatusRunning, runs[0].Status, "the run goes on")

			g.open()
			requireStatus(t, f, id, runner.StatusWaiting)
			res, _ := f.rest(http.MethodPost, "/api/hooks/slow/resume", map[string]any{"ok": true}, http.Header{"Content-Type": {"application/json"}})
			require.Equal(t, http.StatusAccepted, res.StatusCode)
			final := requireStatus(t, f, id, runner.StatusCompleted)
			require.JSONEq(t, `true`, string(final.Output))
		})
	}
}

// requireStatus waits for run id to reach status and returns it then.
func requireStatus(t *testing.T, f *fixture, id string, status runner.Status) *runner.Run {
	t.Helper()
	var r *runner.Run
	require.Eventually(t, func() bool {
		var err error
		r, err = f.engine.Get(context.Background(), id)
		return err == nil && r.Status == status
	}, 10*time.Second, 10*time.Millisecond, "run %s never became %s", id, status)
	return r
}
