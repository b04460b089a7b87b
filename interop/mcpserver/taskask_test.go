package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
)

// sseMessages reads the messages of an event stream as they come.
func sseMessages(t *testing.T, res *http.Response) <-chan map[string]any {
	t.Helper()
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream"), res.Header.Get("Content-Type"))
	out := make(chan map[string]any, 8)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				var msg map[string]any
				if json.Unmarshal([]byte(strings.TrimSpace(data)), &msg) == nil {
					out <- msg
				}
			}
		}
	}()
	return out
}

// reply POSTs a client's reply to a request of the server's and returns the HTTP status.
func (s *rpcSession) reply(t *testing.T, token string, id any, result map[string]any) int {
	t.Helper()
	f := *s.f
	f.token = token
	res, err := f.post(context.Background(), rpcRequest{header: s.header(), body: map[string]any{"jsonrpc": "2.0", "id": id, "result": result}})
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// TestTaskResultAsks: a 2025-11-25 client that declared elicitation and awaits a task with
// tasks/result gets the run's question on that request's stream, tied to the task; an
// answer that does not fit is asked again, one that fits resumes the hook, and the stream
// ends with the result. A reply from another principal is not taken.
func TestTaskResultAsks(t *testing.T) {
	f := newFixture(t, askDef)
	s := f.openSessionWith(t, map[string]any{"elicitation": map[string]any{}})
	taskID := s.ok(t, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"orderId": "r1"}, "task": map[string]any{}})["task"].(map[string]any)["taskId"]

	res, err := f.post(context.Background(), rpcRequest{header: s.header(), body: map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tasks/result", "params": map[string]any{"taskId": taskID}}})
	require.NoError(t, err)
	defer res.Body.Close()
	stream := sseMessages(t, res)

	question := <-stream
	require.Equal(t, "elicitation/create", question["method"], "%v", question)
	params := question["params"].(map[string]any)
	require.Equal(t, "Charge order r1?", params["message"])
	require.Equal(t, map[string]any{"taskId": taskID}, params["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"])

	require.NotEqual(t, http.StatusAccepted, s.reply(t, f.mint("admin"), question["id"], map[string]any{"action": "accept", "content": map[string]any{"approved": false}}))
	require.Equal(t, http.StatusAccepted, s.reply(t, f.token, question["id"], map[string]any{"action": "accept", "content": map[string]any{"approved": "yes"}}))

	again := <-stream
	require.Equal(t, "elicitation/create", again["method"])
	require.NotEqual(t, question["id"], again["id"])
	require.Contains(t, again["params"].(map[string]any)["message"], "/approved")
	require.Equal(t, http.StatusAccepted, s.reply(t, f.token, again["id"], map[string]any{"action": "accept", "content": map[string]any{"approved": true}}))

	final := <-stream
	require.EqualValues(t, 99, final["id"])
	content := final["result"].(map[string]any)["structuredContent"].(map[string]any)
	require.Equal(t, "completed", content["status"])
	require.Equal(t, map[string]any{"approved": true}, content["output"])
}

// TestTaskResultWithoutElicitationWaits: a client that did not declare elicitation is not
// asked; tasks/result waits until another path answers the hook.
func TestTaskResultWithoutElicitationWaits(t *testing.T) {
	f := newFixture(t, askDef)
	s := f.openSession(t)
	taskID := s.ok(t, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"orderId": "r2"}, "task": map[string]any{}})["task"].(map[string]any)["taskId"]
	done := make(chan []byte, 1)
	go func() { // no require off the test's goroutine: the answer goes back whole
		res, err := f.post(context.Background(), rpcRequest{header: s.header(), body: map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tasks/result", "params": map[string]any{"taskId": taskID}}})
		if err != nil {
			done <- []byte(err.Error())
			return
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		done <- raw
	}()
	require.Eventually(t, func() bool {
		res, _ := f.rest("POST", "/api/hooks/ask:r2/resume", map[string]any{"approved": true}, http.Header{})
		return res.StatusCode == http.StatusAccepted || res.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
	raw := <-done
	var got struct {
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(raw, &got), "%s", raw)
	require.Equal(t, map[string]any{"approved": true}, got.Result.StructuredContent["output"], "%s", raw)
}

// TestTaskResultGivesUpAfterInvalidAnswers: on a tasks/result stream, answers that do not
// fit are asked again up to MaxAskAttempts; then the question is withdrawn for the hook —
// the task is working, waiting on it — and the stream ends with the result, asking nothing
// more, once the REST resume answers the hook.
func TestTaskResultGivesUpAfterInvalidAnswers(t *testing.T) {
	f := newFixture(t, askDef)
	s := f.openSessionWith(t, map[string]any{"elicitation": map[string]any{}})
	taskID := s.ok(t, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"orderId": "g1"}, "task": map[string]any{}})["task"].(map[string]any)["taskId"]
	res, err := f.post(context.Background(), rpcRequest{header: s.header(), body: map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tasks/result", "params": map[string]any{"taskId": taskID}}})
	require.NoError(t, err)
	defer res.Body.Close()
	stream := sseMessages(t, res)
	for i := 1; i <= mcpserver.MaxAskAttempts; i++ {
		question := <-stream
		require.Equal(t, "elicitation/create", question["method"], "question %d: %v", i, question)
		require.Equal(t, http.StatusAccepted, s.reply(t, f.token, question["id"], map[string]any{"action": "accept", "content": map[string]any{"approved": "yes"}}))
	}
	require.Eventually(t, func() bool {
		got := s.ok(t, "tasks/get", map[string]any{"taskId": taskID})
		return got["status"] == "working" && got["statusMessage"] == "step 1/2 approve (hook): waiting on hook ask:g1"+mcpserver.ResumeHint
	}, 10*time.Second, 20*time.Millisecond, "no longer input_required")

	resumed, body := f.rest("POST", "/api/hooks/ask:g1/resume", map[string]any{"approved": true}, http.Header{})
	require.Less(t, resumed.StatusCode, 300, "%v", body)
	final := <-stream
	require.EqualValues(t, 99, final["id"], "the result, not another question: %v", final)
	require.Equal(t, map[string]any{"approved": true}, final["result"].(map[string]any)["structuredContent"].(map[string]any)["output"])
}
