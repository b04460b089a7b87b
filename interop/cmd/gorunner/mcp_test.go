package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
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

// connectHTTP opens an MCP session over streamable HTTP at url/mcp with token.
func connectHTTP(t *testing.T, url, token string, changes *atomic.Int32) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changes.Add(1) },
	})
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	return session
}

// TestMCPOverHTTP drives /mcp of the real `gorunner serve` with the official SDK client:
// tools with their schemas, a call, invalid arguments, a keyed replay across MCP and REST,
// a waiting run continued with gorunner_get_run, list_changed after a publish made by a
// second serve process on the same store, and 401 without a token.
func TestMCPOverHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir, "--examples")
	token := s.adminToken(t)
	var changes atomic.Int32
	session := connectHTTP(t, s.url, token, &changes)

	tools, err := session.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var greet *mcp.Tool
	for _, tool := range tools.Tools {
		if tool.Name == "greet" {
			greet = tool
		}
	}
	require.NotNil(t, greet)
	props := greet.InputSchema.(map[string]any)["properties"].(map[string]any)
	require.Contains(t, props, "name")
	require.Contains(t, props, "idempotencyKey")
	require.NotNil(t, greet.Annotations.DestructiveHint, "every hint is explicit")
	require.True(t, greet.Annotations.ReadOnlyHint)

	res, first := callTool(t, session, "greet", map[string]any{"name": "Ada", "idempotencyKey": "http-1"})
	require.False(t, res.IsError)
	require.Equal(t, "completed", first["status"])
	_, again := callTool(t, session, "greet", map[string]any{"name": "Ada", "idempotencyKey": "http-1"})
	require.Equal(t, first["runId"], again["runId"])
	require.Equal(t, true, again["replayed"])
	status, body := call(t, token, "POST", s.url+"/api/workflows/greet/run", `{"name":"Ada"}`, "Idempotency-Key", "http-1")
	require.Equal(t, 202, status, body)
	require.Equal(t, first["runId"], body["data"].(map[string]any)["id"], "one run for the MCP call and the REST retry")

	bad, _ := callTool(t, session, "greet", map[string]any{"name": 7})
	require.True(t, bad.IsError)

	_, order := callTool(t, session, "process-order", map[string]any{"orderId": "o-http", "amount": 5})
	require.Equal(t, "waiting", order["status"], order)
	status, _ = call(t, token, "POST", s.url+"/api/hooks/order:o-http/resume", `{"confirmed": true}`)
	require.Equal(t, 202, status)
	require.Eventually(t, func() bool {
		_, got := callTool(t, session, "gorunner_get_run", map[string]any{"runId": order["runId"], "waitSeconds": 5})
		return got["status"] == "completed"
	}, 30*time.Second, 10*time.Millisecond)

	other := startServe(t, dir)
	before := changes.Load()
	status, body = call(t, token, "POST", other.url+"/api/workflows", `{"name":"later","input":{"type":"object"},"steps":[{"id":"s","set":1}]}`)
	require.Equal(t, 201, status, body)
	status, _ = call(t, token, "POST", other.url+"/api/workflows/later/publish", "")
	require.Equal(t, 201, status)
	require.Eventually(t, func() bool { return changes.Load() > before }, 2*time.Second, 10*time.Millisecond,
		"list_changed for a publish made by another process")

	res2, err := http.Post(s.url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	res2.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res2.StatusCode)
	require.Contains(t, res2.Header.Get("WWW-Authenticate"), "resource_metadata=")
}

// TestMCPListLimit runs `gorunner mcp` with GORUNNER_MCP_LIST_LIMIT one below the four
// examples: tools/list offers the search tools, and a workflow runs through them.
func TestMCPListLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir, "--examples")
	cmd := exec.Command(binary(t), "mcp", "--data-dir", dir)
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=warn", "GORUNNER_TOKEN="+s.adminToken(t), "GORUNNER_MCP_LIST_LIMIT=3")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })

	names := toolNames(t, session)
	require.Contains(t, names, "gorunner_find_workflows")
	require.NotContains(t, names, "greet")
	res, ran := callTool(t, session, "gorunner_run_workflow", map[string]any{"workflow": "greet", "arguments": map[string]any{"name": "Ada"}})
	require.False(t, res.IsError)
	require.Equal(t, map[string]any{"message": "Hello, Ada!"}, ran["output"])

	out, err := exec.Command(binary(t), "mcp", "--data-dir", t.TempDir(), "--mcp-list-limit", "0").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "--mcp-list-limit must be at least 1")
}
