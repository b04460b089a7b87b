package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
)

// dozeYAML sleeps two seconds: shorter than a tool call's wait.
const dozeYAML = `name: doze
input: {type: object}
steps:
  - {id: rest, sleep: {duration: 2s}}
  - {id: done, set: awake}
`

// TestWaitsTypeScriptSDK: the MCP TypeScript SDK's client without elicitation
// (.ci/mcp-tools/waits-client.mjs) against serve --examples: a 2-second sleep's result in
// one call; the approval's question in waitingOn.hook; a typo refused; the approval
// delivered and a second one queued, kept on the run; a tasks-extension client without
// elicitation never asked (working, told how to resume).
func TestWaitsTypeScriptSDK(t *testing.T) {
	t.Parallel()
	tools := mcpTools(t)
	s := startServe(t, t.TempDir(), "--examples")
	token := s.adminToken(t)
	status, body := call(t, token, "POST", s.url+"/api/workflows", dozeYAML, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = call(t, token, "POST", s.url+"/api/workflows/doze/publish", "")
	require.Equal(t, http.StatusCreated, status, "%v", body)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := npmCommand(ctx, tools, "node", filepath.Join(tools, "..", "..", "waits-client.mjs"))
	cmd.Env = append(cmd.Env, "GORUNNER_URL="+s.url, "GORUNNER_TOKEN="+token)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "waits-client.mjs: %s", out)
	var got struct {
		Doze, First, Second, Done map[string]any
		Hook                      map[string]any
		Typo                      struct {
			IsError bool
			Text    string
		}
		Undelivered []map[string]any
		Task        struct{ Created, Polled map[string]any }
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, "completed", got.Doze["status"], "a 2-second sleep's result in one call")
	require.Equal(t, "awake", got.Doze["output"])
	require.Equal(t, "approval:ts-waits", got.Hook["token"])
	require.Equal(t, "Approve request ts-waits?", got.Hook["message"])
	require.Contains(t, got.Hook["schema"].(map[string]any)["required"], "approved")
	require.True(t, got.Typo.IsError, "the typo is refused")
	require.Contains(t, got.Typo.Text, "approved")
	require.Equal(t, "delivered", got.First["delivery"])
	require.Equal(t, "queued", got.Second["delivery"], "%v", got.Second)
	require.Contains(t, got.Second["message"], "no hook step waits on token")
	require.Equal(t, "completed", got.Done["status"])
	require.Equal(t, map[string]any{"requestId": "ts-waits", "approved": true, "by": "Ada"}, got.Done["output"])
	require.Equal(t, []map[string]any{{"token": "approval:ts-waits", "payload": map[string]any{"approved": false}}}, got.Undelivered)
	for name, task := range map[string]map[string]any{"created": got.Task.Created, "polled": got.Task.Polled} {
		require.Equal(t, "working", task["status"], name)
		require.Equal(t, "step 1/3 decision (hook): waiting on hook approval:ts-task"+mcpserver.ResumeHint, task["statusMessage"], name)
		require.Nil(t, task["inputRequests"], name)
	}
}

// TestServeShutsDownWithLiveStreams: SIGTERM while a run's event stream and a long wait on
// it are open ends both at once (the wait answers with the run as it stands) and serve
// exits 0, well within its shutdown timeout.
func TestServeShutsDownWithLiveStreams(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir(), "--examples")
	token := s.adminToken(t)
	status, body := call(t, token, "POST", s.url+"/api/workflows/approval/run", `{"requestId": "shutdown"}`)
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	id := body["data"].(map[string]any)["id"].(string)

	get := func(path string) (*http.Response, error) {
		req, err := http.NewRequest("GET", s.url+path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}
	waited := make(chan int, 1) // the wait's status; 0 when the connection closed first
	go func() {
		res, err := get("/api/runs/" + id + "?wait=60s")
		if err != nil {
			waited <- 0
			return
		}
		res.Body.Close()
		waited <- res.StatusCode
	}()
	stream, err := get("/api/runs/" + id + "/events")
	require.NoError(t, err)
	defer stream.Body.Close()
	lines := bufio.NewScanner(stream.Body)
	require.True(t, lines.Scan(), "the stream is open")

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	requireExitsCleanly(t, s.cmd, 10*time.Second) // the shutdown timeout is 20 s
	for lines.Scan() {
	}
	select {
	case status := <-waited:
		require.Contains(t, []int{http.StatusOK, 0}, status)
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end")
	}
}
