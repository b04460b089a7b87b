package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/syncbuf"
)

// callToolOverHTTP calls a tool at s's /mcp and returns the result.
func callToolOverHTTP(t *testing.T, s *server, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{s.adminToken(t)}}, DisableStandaloneSSE: true}
	session, err := client.Connect(context.Background(), transport, nil)
	require.NoError(t, err)
	defer session.Close()
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

// scrape reads s's /metrics.
func scrape(t *testing.T, s *server) string {
	t.Helper()
	res, err := http.Get(s.url + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(raw)
}

// TestMetricsAfterTraffic sends REST, keyed and MCP traffic and scrapes /metrics.
func TestMetricsAfterTraffic(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir())
	files := t.TempDir()
	_, stderr, code := cli(t, s, "workflow", "apply", writeFile(t, files, "hello.yaml", helloYAML), writeFile(t, files, "charge.yaml", failingYAML))
	require.Equal(t, 0, code, stderr)
	for range 2 {
		_, stderr, code = cli(t, s, "run", "hello", "--input", `{"name": "Ada"}`, "--key", "k1", "--wait")
		require.Equal(t, 0, code, stderr)
	}
	_, _, code = cli(t, s, "run", "hello", "--input", `{"name": "Bob"}`, "--key", "k1")
	require.Equal(t, 1, code, "the same key with another input is refused")
	_, _, code = cli(t, s, "run", "charge", "--wait")
	require.Equal(t, 1, code)
	require.False(t, callToolOverHTTP(t, s, "hello", map[string]any{"name": "Eve"}).IsError)
	require.True(t, callToolOverHTTP(t, s, "hello", map[string]any{}).IsError, "invalid arguments")

	m := scrape(t, s)
	for _, want := range []string{
		`gorunner_runs_started_total{workflow="hello"} 2`,
		`gorunner_runs_finished_total{status="completed",workflow="hello"} 2`,
		`gorunner_runs_finished_total{status="failed",workflow="charge"} 1`,
		`gorunner_step_duration_seconds_count{kind="set",status="completed"} 2`,
		`gorunner_step_duration_seconds_count{kind="fail",status="failed"} 1`,
		`gorunner_idempotency_requests_total{outcome="new"} 1`,
		`gorunner_idempotency_requests_total{outcome="replay"} 1`,
		`gorunner_idempotency_requests_total{outcome="mismatch"} 1`,
		`gorunner_idempotency_requests_total{outcome="store_down"} 0`,
		`gorunner_mcp_tool_calls_total{outcome="ok",tool="hello"} 1`,
		`gorunner_mcp_tool_calls_total{outcome="tool_error",tool="hello"} 1`,
		// Runs of set and fail steps end in their admission: one create_run each, no save_run.
		`gorunner_store_duration_seconds_count{op="create_run"} 3`,
	} {
		require.Contains(t, m, want)
	}
	// A keyed admission of a fresh key writes the key with the run without reading it
	// first, and its replays are held in memory: no key is read.
	require.NotContains(t, m, `gorunner_store_duration_seconds_count{op="key_get"}`)
}

// TestLogsCarryRequestIDsAndNoSecrets logs everything (debug, JSON) through traffic that
// handles every kind of secret, then checks that request lines carry their request ID and
// that no secret appears anywhere in the log.
func TestLogsCarryRequestIDsAndNoSecrets(t *testing.T) {
	t.Parallel()
	logs := &syncbuf.Buffer{}
	s := startServeLogging(t, t.TempDir(), logs, "--log-level", "debug", "--log-format", "json")
	admin := s.adminToken(t)
	_, stderr, code := cli(t, s, "workflow", "apply", writeFile(t, t.TempDir(), "hello.yaml", helloYAML))
	require.Equal(t, 0, code, stderr)

	const connSecret = "conn-secret-5f1d9c"
	status, body := call(t, admin, "POST", s.url+"/api/connections", `{"name": "pay", "type": "bearer", "secret": "`+connSecret+`", "hosts": ["pay.example.com"]}`)
	require.Equal(t, 201, status, body)
	status, body = call(t, admin, "POST", s.url+"/api/tokens", `{"name": "ci"}`)
	require.Equal(t, 201, status, body)
	apiToken := body["data"].(map[string]any)["token"].(string)
	status, body = call(t, admin, "GET", s.url+"/api/workflows/hello", "")
	require.Equal(t, 200, status, body)
	webhook := body["data"].(map[string]any)["webhookUrl"].(string)
	status, _ = call(t, "", "POST", webhook, `{"name": "Ada"}`, "Idempotency-Key", "wh-1")
	require.Equal(t, 200, status)
	status, _ = call(t, apiToken+"x", "GET", s.url+"/api/runs", "")
	require.Equal(t, 401, status)
	status, _ = call(t, apiToken, "GET", s.url+"/api/runs/nope", "")
	require.Equal(t, 404, status)
	require.False(t, callToolOverHTTP(t, s, "hello", map[string]any{"name": "Eve"}).IsError)
	s.stop()

	out := logs.String()
	webhookToken := webhook[strings.LastIndex(webhook, "/")+1:]
	for _, secret := range []string{admin, apiToken, webhookToken, connSecret} {
		require.NotContains(t, out, secret)
	}
	requests := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		if line["msg"] == "request" {
			requests++
			require.NotEmpty(t, line["request_id"], sc.Text())
			require.NotContains(t, line, "path", "routes, not paths, are logged: paths hold tokens")
		}
	}
	require.GreaterOrEqual(t, requests, 8)
	require.Contains(t, out, `"route":"/webhooks/{token}"`)
}

// TestServeShutsDownOnSignal checks that serve stops promptly and cleanly on SIGTERM.
func TestServeShutsDownOnSignal(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir())
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	requireExitsCleanly(t, s.cmd, 25*time.Second)
}

// TestMCPShutsDownOnSignal checks that `gorunner mcp` stops promptly and cleanly on SIGTERM
// and SIGINT while its client keeps stdin open.
func TestMCPShutsDownOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		cmd, _ := startMCP(t, nil)
		require.NoError(t, cmd.Process.Signal(sig))
		requireExitsCleanly(t, cmd, 15*time.Second)
	}
}

// requireExitsCleanly waits up to limit for cmd to exit with code 0.
func requireExitsCleanly(t *testing.T, cmd *exec.Cmd, limit time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		t.Fatalf("%s did not exit within %s", cmd.Args[1], limit)
	}
}
