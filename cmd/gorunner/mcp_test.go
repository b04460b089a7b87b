package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// connectStdio starts `gorunner mcp` on dataDir and opens an MCP session over its stdio.
func connectStdio(t *testing.T, dataDir, token string, changes *atomic.Int32) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary(t), "mcp", "--data-dir", dataDir)
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=warn", "GORUNNER_TOKEN="+token)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changes.Add(1) },
	})
	session, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	return session
}

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range s.Tools(context.Background(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	return names
}

func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return res, out
}

// TestMCPOverStdio drives `gorunner mcp` with the official SDK client while `gorunner
// serve` shares its store: tools, a call, a keyed replay across MCP and REST, and the tool
// list following a publish made by the other process.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir, "--examples")
	token := s.adminToken(t)
	var changes atomic.Int32
	session := connectStdio(t, dir, token, &changes)

	require.Subset(t, toolNames(t, session), []string{"greet", "approval", "gorunner_get_run", "gorunner_resume_hook"})

	res, first := callTool(t, session, "greet", map[string]any{"name": "Ada", "idempotencyKey": "stdio-1"})
	require.False(t, res.IsError)
	require.Equal(t, "completed", first["status"])
	require.Equal(t, map[string]any{"message": "Hello, Ada!"}, first["output"])
	require.Equal(t, false, first["replayed"])

	status, body := call(t, token, "POST", s.url+"/api/workflows/greet/run?environment=production", `{"name": "Ada"}`,
		"Idempotency-Key", "stdio-1", "Content-Type", "application/json")
	require.Equal(t, 202, status, body)
	require.Equal(t, first["runId"], body["data"].(map[string]any)["id"], "the REST retry replays the MCP call")

	bad, _ := callTool(t, session, "greet", map[string]any{"name": ""})
	require.True(t, bad.IsError)

	def := `{"name": "later", "input": {"type": "object"}, "steps": [{"id": "s", "set": 1}]}`
	status, body = call(t, token, "POST", s.url+"/api/workflows", def, "Content-Type", "application/json")
	require.Equal(t, 201, status, body)
	status, body = call(t, token, "POST", s.url+"/api/workflows/later/publish", "")
	require.Equal(t, 201, status, body)
	require.Eventually(t, func() bool { return changes.Load() > 0 }, 2*time.Second, 10*time.Millisecond)
	require.Contains(t, toolNames(t, session), "later")
}

func TestMCPRefusesAnInvalidToken(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t), "mcp", "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "GORUNNER_TOKEN=gr_not-a-token")
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "GORUNNER_TOKEN is not a valid token")
}
