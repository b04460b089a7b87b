package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

// stdioLines is a raw stdio client: it writes JSON-RPC lines and reads what comes back.
type stdioLines struct {
	w    io.Writer
	msgs chan map[string]any
}

func (f *fixture) stdio(t *testing.T) *stdioLines {
	t.Helper()
	return f.stdioAs(t, auth.Local())
}

// stdioAs is stdio for the principal p.
func (f *fixture) stdioAs(t *testing.T, p auth.Principal) *stdioLines {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.mcp.ServeStdio(ctx, p, inR, outW)
		outW.Close()
	}()
	c := &stdioLines{w: inW, msgs: make(chan map[string]any, 64)}
	go func() {
		defer close(c.msgs)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close() // a test that stopped reading must not leave the server blocked writing
		<-done
	})
	return c
}

// initialize opens a 2025-11-25 session (id 0) with the client's capabilities (none when
// nil) and sends notifications/initialized.
func (c *stdioLines) initialize(t *testing.T, capabilities map[string]any) {
	t.Helper()
	if capabilities == nil {
		capabilities = map[string]any{}
	}
	c.send(t, map[string]any{"id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": map[string]any{"name": "raw", "version": "1"}}})
	c.next(t, byID(0))
	c.send(t, map[string]any{"method": "notifications/initialized"})
}

func (c *stdioLines) send(t *testing.T, msg map[string]any) {
	t.Helper()
	msg["jsonrpc"] = "2.0"
	raw, err := json.Marshal(msg)
	require.NoError(t, err)
	_, err = c.w.Write(append(raw, '\n'))
	require.NoError(t, err)
}

// next reads messages until one satisfies match.
func (c *stdioLines) next(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			require.True(t, ok, "the server closed stdout")
			if match(m) {
				return m
			}
		case <-timeout:
			require.FailNow(t, "no matching message")
		}
	}
}

func byID(id float64) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["id"] == id }
}

func TestTasksOverStdioNotifyStatus(t *testing.T) {
	f := newFixture(t, napDef)
	c := f.stdio(t)
	c.initialize(t, nil)

	c.send(t, map[string]any{"id": 2, "method": "tools/call", "params": map[string]any{"name": "nap", "arguments": map[string]any{"n": 3}, "task": map[string]any{}}})
	task := c.next(t, byID(2))["result"].(map[string]any)["task"].(map[string]any)
	require.Equal(t, "working", task["status"])

	done := c.next(t, func(m map[string]any) bool {
		if m["method"] != "notifications/tasks/status" {
			return false
		}
		p := m["params"].(map[string]any)
		return p["taskId"] == task["taskId"] && p["status"] == "completed"
	})
	require.NotEmpty(t, done["params"].(map[string]any)["lastUpdatedAt"])

	c.send(t, map[string]any{"id": 3, "method": "tasks/result", "params": map[string]any{"taskId": task["taskId"]}})
	result := c.next(t, byID(3))["result"].(map[string]any)
	require.Equal(t, map[string]any{"n": float64(3)}, result["structuredContent"].(map[string]any)["output"])

	c.send(t, map[string]any{"id": 4, "method": "tools/list"})
	require.NotEmpty(t, c.next(t, byID(4))["result"].(map[string]any)["tools"], "other requests still reach mcp-go")
}

// TestElicitationLegacyClient asks a 2025-11-25 client over stdio: mcp-go turns the
// input_required result into an elicitation/create request, and the answer finishes the run.
func TestElicitationLegacyClient(t *testing.T) {
	f := newFixture(t, askDef)
	c := f.stdio(t)
	c.initialize(t, map[string]any{"elicitation": map[string]any{}})
	c.send(t, map[string]any{"id": 2, "method": "tools/call", "params": map[string]any{"name": "ask", "arguments": map[string]any{"orderId": "legacy"}}})

	isAsk := func(m map[string]any) bool { return m["method"] == "elicitation/create" }
	first := c.next(t, isAsk)
	require.Equal(t, "Charge order legacy?", first["params"].(map[string]any)["message"])
	c.send(t, map[string]any{"id": first["id"], "result": map[string]any{"action": "accept", "content": map[string]any{"approved": 1}}})
	second := c.next(t, isAsk)
	require.Contains(t, second["params"].(map[string]any)["message"], "/approved")
	c.send(t, map[string]any{"id": second["id"], "result": map[string]any{"action": "decline"}})

	got := c.next(t, byID(2))["result"].(map[string]any)["structuredContent"].(map[string]any)
	require.Equal(t, "completed", got["status"])
	require.Equal(t, map[string]any{"declined": true, "action": "decline"}, got["output"])
}

// TestTasksExtensionOverStdio: a 2026-07-28 client over stdio (no handshake) gets the task
// of a run waiting on a question, declines it with tasks/update and polls the task to its
// end with tasks/get.
func TestTasksExtensionOverStdio(t *testing.T) {
	f := newFixture(t, askDef)
	c := f.stdio(t)
	c.send(t, extRequest(1, "tools/call", "ask", map[string]any{"name": "ask", "arguments": map[string]any{"orderId": "std"}}).body)
	task := c.next(t, byID(1))["result"].(map[string]any)
	require.Equal(t, "task", task["resultType"])
	require.Equal(t, "input_required", task["status"])
	taskID := task["taskId"].(string)

	c.send(t, extTask(2, "tasks/update", taskID, map[string]any{"inputResponses": map[string]any{"approve": map[string]any{"action": "decline"}}}).body)
	require.Equal(t, map[string]any{"resultType": "complete"}, c.next(t, byID(2))["result"])
	var got map[string]any
	id := 2
	require.Eventually(t, func() bool {
		id++
		c.send(t, extTask(id, "tasks/get", taskID, nil).body)
		got = c.next(t, byID(float64(id)))["result"].(map[string]any)
		return got["status"] == "completed"
	}, 10*time.Second, 20*time.Millisecond)
	output := got["result"].(map[string]any)["structuredContent"].(map[string]any)["output"]
	require.Equal(t, map[string]any{"declined": true, "action": "decline"}, output)
}
