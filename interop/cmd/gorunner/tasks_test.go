package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawMCP is `gorunner mcp` driven with raw JSON-RPC lines, as a client without an SDK.
type rawMCP struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	msgs chan map[string]any
}

func startRawMCP(t *testing.T, dataDir, token string) *rawMCP {
	t.Helper()
	cmd := exec.Command(binary(t), "mcp", "--data-dir", dataDir)
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=warn", "GORUNNER_TOKEN="+token)
	cmd.Stderr = os.Stderr
	return startRawMCPCmd(t, cmd)
}

// startRawMCPCmd starts cmd, a `gorunner mcp`, and initializes a session over its stdio.
func startRawMCPCmd(t *testing.T, cmd *exec.Cmd) *rawMCP {
	t.Helper()
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	m := &rawMCP{cmd: cmd, in: in, msgs: make(chan map[string]any, 64)}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		defer close(m.msgs)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var msg map[string]any
			if json.Unmarshal(sc.Bytes(), &msg) == nil {
				m.msgs <- msg
			}
		}
	}()
	m.request(t, 0, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}, time.Minute)
	m.send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return m
}

func (m *rawMCP) send(t *testing.T, msg map[string]any) {
	t.Helper()
	raw, err := json.Marshal(msg)
	require.NoError(t, err)
	_, err = m.in.Write(append(raw, '\n'))
	require.NoError(t, err)
}

// request sends a request and returns its result.
func (m *rawMCP) request(t *testing.T, id int, method string, params map[string]any, wait time.Duration) map[string]any {
	t.Helper()
	m.send(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timeout := time.After(wait)
	for {
		select {
		case msg, ok := <-m.msgs:
			require.True(t, ok, "gorunner mcp closed its stdout")
			if msg["id"] == float64(id) {
				require.Nil(t, msg["error"], "%v", msg)
				return msg["result"].(map[string]any)
			}
		case <-timeout:
			require.FailNow(t, "no answer to "+method)
		}
	}
}

// TestTaskSurvivesSIGKILL creates a task on one `gorunner mcp` process, kills it with
// SIGKILL mid-run, and reads the task to its end from a new process on the same store.
func TestTaskSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir)
	token := s.adminToken(t)
	def := `{"name": "slow", "input": {"type": "object"}, "steps": [
	  {"id": "nap", "sleep": {"duration": "2s"}},
	  {"id": "done", "set": {"slept": true}}]}`
	status, body := call(t, token, "POST", s.url+"/api/workflows", def)
	require.Equal(t, 201, status, body)
	status, _ = call(t, token, "POST", s.url+"/api/workflows/slow/publish", "")
	require.Equal(t, 201, status)
	s.stop()

	first := startRawMCP(t, dir, token)
	created := first.request(t, 1, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}, "task": map[string]any{}}, time.Minute)
	taskID := created["task"].(map[string]any)["taskId"].(string)
	require.NoError(t, first.cmd.Process.Kill())
	_ = first.cmd.Wait()

	second := startRawMCP(t, dir, token)
	got := second.request(t, 2, "tasks/get", map[string]any{"taskId": taskID}, time.Minute)
	require.Equal(t, taskID, got["taskId"])
	result := second.request(t, 3, "tasks/result", map[string]any{"taskId": taskID}, 2*time.Minute)
	content := result["structuredContent"].(map[string]any)
	require.Equal(t, "completed", content["status"])
	require.Equal(t, map[string]any{"slept": true}, content["output"])
	listed := second.request(t, 4, "tasks/list", nil, time.Minute)
	require.Equal(t, taskID, listed["tasks"].([]any)[0].(map[string]any)["taskId"])
}

// TestTasksTypeScriptSDK: the MCP TypeScript SDK's experimental tasks client
// (.ci/mcp-tools/tasks-client.mjs) over HTTP and over stdio: a call as a task read to its
// result (tools/call with task, tasks/get, tasks/result), a task whose question reaches
// the SDK's elicitation handler on the tasks/result stream, and a long task listed and
// cancelled (tasks/list, tasks/cancel).
func TestTasksTypeScriptSDK(t *testing.T) {
	t.Parallel()
	tools := mcpTools(t)
	dir := t.TempDir()
	s := startServe(t, dir, "--examples")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := npmCommand(ctx, tools, "node", filepath.Join(tools, "..", "..", "tasks-client.mjs"))
	cmd.Env = append(cmd.Env, "GORUNNER_URL="+s.url, "GORUNNER_TOKEN="+s.adminToken(t), "GORUNNER_BIN="+binary(t), "GORUNNER_DATA="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "tasks-client.mjs: %s", out)
	var got map[string]struct {
		TaskSupport map[string]string `json:"taskSupport"`
		Greet       tsStream          `json:"greet"`
		GreetResult map[string]any    `json:"greetResult"`
		Approval    tsStream          `json:"approval"`
		Asked       []struct {
			Message     string `json:"message"`
			RelatedTask string `json:"relatedTask"`
		} `json:"asked"`
		Long struct {
			Status, StatusMessage, Cancelled string
			Listed                           bool
		} `json:"long"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	for _, transport := range []string{"http", "stdio"} {
		r := got[transport]
		require.Equal(t, "optional", r.TaskSupport["long-report"], transport)
		require.Equal(t, "taskCreated", r.Greet.Types[0], transport)
		require.Equal(t, []string{"taskStatus:completed", "result"}, r.Greet.Types[len(r.Greet.Types)-2:], "polled to the end, %s", transport)
		require.Equal(t, map[string]any{"message": "Hello, Ada!"}, r.Greet.Output, transport)
		require.Equal(t, r.Greet.TaskID, r.GreetResult["runId"], "tasks/result again, %s", transport)
		require.Contains(t, r.Approval.Types, "taskStatus:input_required", transport)
		require.Equal(t, "completed", r.Approval.Status, transport)
		require.Equal(t, map[string]any{"requestId": "ts-" + transport, "approved": true, "by": "Ada"}, r.Approval.Output, transport)
		require.Len(t, r.Asked, 1, transport)
		require.Equal(t, "Approve request ts-"+transport+"?", r.Asked[0].Message)
		require.Equal(t, r.Approval.TaskID, r.Asked[0].RelatedTask, "the question names its task, %s", transport)
		require.Equal(t, "working", r.Long.Status, transport)
		require.Equal(t, "step 1/4 gather (sleep)", r.Long.StatusMessage, transport)
		require.True(t, r.Long.Listed, transport)
		require.Equal(t, "cancelled", r.Long.Cancelled, transport)
	}
}

// tsStream is what tasks-client.mjs saw of one callToolStream.
type tsStream struct {
	Types  []string       `json:"types"`
	TaskID string         `json:"taskId"`
	Status string         `json:"status"`
	Output map[string]any `json:"output"`
}
