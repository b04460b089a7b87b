package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// The 2025-11-25 task requests need the handshake tools/call needs: the Mcp-Session-Id
// initialize minted for the caller, and a protocol version the server knows. Without them
// nothing is answered and no run starts.
func TestTaskRequestsNeedTheSession(t *testing.T) {
	f := newFixture(t, greetDef, approveDef)
	s := f.openSession(t)
	submitted, err := f.engine.Submit(context.Background(), runner.SubmitParams{Workflow: "approve", Environment: runner.EnvProduction,
		Input: json.RawMessage(`{"orderId":"o1"}`), By: &auth.Principal{ID: f.principal, Scopes: auth.AdminScopes()}})
	require.NoError(t, err)
	run, err := f.engine.Wait(context.Background(), submitted.Run.ID, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, runner.StatusWaiting, run.Status)
	requests := map[string]map[string]any{
		"tasks/list":   {},
		"tasks/get":    {"taskId": run.ID},
		"tasks/result": {"taskId": run.ID},
		"tasks/cancel": {"taskId": run.ID},
		"tools/call":   {"name": "greet", "arguments": map[string]any{"name": "Bob"}, "task": map[string]any{"ttl": 60000}},
	}
	headers := []struct {
		name   string
		header http.Header
		status int
	}{
		{"no session", http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, http.StatusNotFound},
		{"made-up session", http.Header{"Mcp-Session-Id": {"mcp-session-x.y"}, "Mcp-Protocol-Version": {"2025-11-25"}}, http.StatusNotFound},
		{"unknown protocol", http.Header{"Mcp-Session-Id": {s.id}, "Mcp-Protocol-Version": {"1999-01-01"}}, http.StatusBadRequest},
	}
	for _, h := range headers {
		for method, params := range requests {
			t.Run(h.name+" "+method, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // tasks/result would wait
				defer cancel()
				res, err := f.post(ctx, rpcRequest{header: h.header, body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}})
				require.NoError(t, err)
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				require.NoError(t, err)
				require.Equal(t, h.status, res.StatusCode, "%s", body)
				require.NotContains(t, string(body), run.ID, "nothing of the task is told")
			})
		}
	}
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Len(t, runs, 1, "no task-augmented call started a run")
	require.Equal(t, runner.StatusWaiting, f.engineRun(t, run.ID).Status, "no tasks/cancel reached the run")
	require.NotNil(t, s.ok(t, "tasks/get", map[string]any{"taskId": run.ID}), "the session's own requests are answered")
}
