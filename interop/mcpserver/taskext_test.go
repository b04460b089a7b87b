package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
)

// outlivesDef sleeps well past its toolTimeout.
const outlivesDef = `{"name":"outlives","toolTimeout":"50ms","input":{"type":"object"},
	"steps":[{"id":"rest","sleep":{"duration":"600ms"}},{"id":"done","set":{"slept":true}}]}`

// extRequest is a 2026-07-28 request from a client that declares the tasks extension (and
// elicitation). name is the tool's for tools/call, the task's for the task methods.
func extRequest(id int, method, name string, params map[string]any) rpcRequest {
	r := statelessRequest(id, method, name, params)
	r.body["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/clientCapabilities"] = map[string]any{
		"elicitation": map[string]any{},
		"extensions":  map[string]any{mcpserver.TasksExtension: map[string]any{}},
	}
	return r
}

// extTask sends a task method of the extension for taskID.
func extTask(id int, method, taskID string, params map[string]any) rpcRequest {
	p := map[string]any{"taskId": taskID}
	for k, v := range params {
		p[k] = v
	}
	return extRequest(id, method, taskID, p)
}

// rpcAnswer is the HTTP status, result and error of one JSON-RPC request POSTed to /mcp.
func (f *fixture) rpcAnswer(t testing.TB, r rpcRequest) (int, map[string]any, map[string]any) {
	t.Helper()
	res, err := f.post(context.Background(), r)
	require.NoError(t, err)
	defer res.Body.Close()
	var msg struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	payload := readMessage(t, res)
	require.NoError(t, json.Unmarshal(payload, &msg), "%s", payload)
	return res.StatusCode, msg.Result, msg.Error
}

func TestTasksExtension(t *testing.T) {
	f := newFixture(t, greetDef, outlivesDef, approveDef)
	discovered := f.rpcResult(t, statelessRequest(1, "server/discover", "", nil))
	require.Contains(t, discovered["capabilities"].(map[string]any)["extensions"], mcpserver.TasksExtension)
	require.NotContains(t, discovered["capabilities"], "tasks", "the 2025-11-25 capability is not offered beside the extension")

	done := f.rpcResult(t, extRequest(2, "tools/call", "greet", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}))
	require.Equal(t, "complete", done["resultType"], "a run that ends within the tool's timeout answers its result")
	require.Equal(t, "completed", done["structuredContent"].(map[string]any)["status"])

	created := f.rpcResult(t, extRequest(3, "tools/call", "outlives", map[string]any{"name": "outlives", "arguments": map[string]any{}}))
	require.Equal(t, "task", created["resultType"], "%v", created)
	require.Equal(t, "working", created["status"])
	require.EqualValues(t, mcpserver.TaskTTL.Milliseconds(), created["ttlMs"])
	require.EqualValues(t, mcpserver.TaskPollInterval.Milliseconds(), created["pollIntervalMs"])
	taskID := created["taskId"].(string)
	require.Equal(t, "outlives", f.engineRun(t, taskID).Workflow, "taskId is the run ID")

	var got map[string]any
	require.Eventually(t, func() bool {
		got = f.rpcResult(t, extTask(4, "tasks/get", taskID, nil))
		return got["status"] == "completed"
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, "complete", got["resultType"])
	result := got["result"].(map[string]any)["structuredContent"].(map[string]any)
	require.Equal(t, map[string]any{"slept": true}, result["output"])

	waiting := f.rpcResult(t, extRequest(5, "tools/call", "approve", map[string]any{"name": "approve", "arguments": map[string]any{"orderId": "e1"}}))
	require.Equal(t, "task", waiting["resultType"], "a run waiting on a hook answers its task")
	require.Equal(t, "working", waiting["status"])
	require.Equal(t, "step 1/2 confirm (hook): waiting on hook order:e1"+mcpserver.ResumeHint, waiting["statusMessage"])
	require.Equal(t, map[string]any{"resultType": "complete"}, f.rpcResult(t, extTask(6, "tasks/cancel", waiting["taskId"].(string), nil)))
	require.Eventually(t, func() bool {
		return f.rpcResult(t, extTask(7, "tasks/get", waiting["taskId"].(string), nil))["status"] == "cancelled"
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, map[string]any{"resultType": "complete"}, f.rpcResult(t, extTask(8, "tasks/cancel", waiting["taskId"].(string), nil)),
		"cancelling a task that ended is acknowledged")
}

// TestTasksExtensionRefusals: the methods the extension removed, a client that did not
// declare it, headers that do not match the body and unknown tasks get the extension's
// errors, with the HTTP status 2026-07-28 gives each.
func TestTasksExtensionRefusals(t *testing.T) {
	f := newFixture(t, outlivesDef)
	taskID := f.rpcResult(t, extRequest(1, "tools/call", "outlives", map[string]any{"name": "outlives", "arguments": map[string]any{}}))["taskId"].(string)
	undeclared := statelessRequest(2, "tasks/get", taskID, map[string]any{"taskId": taskID})
	badName := extTask(3, "tasks/get", taskID, nil)
	badName.header.Set("Mcp-Name", "another")
	splitName := extTask(9, "tasks/get", taskID[5:], map[string]any{"name": taskID[:5]})
	splitName.header.Set("Mcp-Name", taskID) // the task ID split between name and taskId
	tests := []struct {
		name   string
		req    rpcRequest
		status int
		code   int
	}{
		{"tasks/result removed", extTask(4, "tasks/result", taskID, nil), http.StatusNotFound, -32601},
		{"tasks/list removed", extRequest(5, "tasks/list", "", nil), http.StatusNotFound, -32601},
		{"extension not declared", undeclared, http.StatusBadRequest, -32021},
		{"header mismatch", badName, http.StatusBadRequest, -32020},
		{"header names a task the body splits", splitName, http.StatusBadRequest, -32020},
		{"unknown task", extTask(6, "tasks/get", "0190c0de-0000-7000-8000-000000000000", nil), http.StatusBadRequest, -32602},
		{"no task ID", extTask(7, "tasks/update", "", nil), http.StatusBadRequest, -32602},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, res, rpcErr := f.rpcAnswer(t, tc.req)
			require.Nil(t, res)
			require.NotNil(t, rpcErr)
			require.EqualValues(t, tc.code, rpcErr["code"], "%v", rpcErr)
			require.Equal(t, tc.status, status)
		})
	}
}

// TestTasksExtensionAsks: a run that reaches a hook that asks is an input_required task
// whose question tasks/update answers; an answer that does not fit is refused and the
// question stays open, an answer under another key is ignored. Another process on the
// store takes the answer and shows the end.
func TestTasksExtensionAsks(t *testing.T) {
	creator := newFixture(t, askDef)
	f := creator.twin()
	created := creator.rpcResult(t, extRequest(1, "tools/call", "ask", map[string]any{"name": "ask", "arguments": map[string]any{"orderId": "x1"}}))
	require.Equal(t, "task", created["resultType"])
	require.Equal(t, "input_required", created["status"])
	taskID := created["taskId"].(string)
	question := created["inputRequests"].(map[string]any)["approve"].(map[string]any)
	require.Equal(t, "elicitation/create", question["method"])
	require.Equal(t, "Charge order x1?", question["params"].(map[string]any)["message"])

	answer := func(id int, key string, content map[string]any) (int, map[string]any, map[string]any) {
		return f.rpcAnswer(t, extTask(id, "tasks/update", taskID, map[string]any{
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": content}}}))
	}
	status, _, rpcErr := answer(2, "approve", map[string]any{"approved": true, "note": "far too long"})
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -32602, rpcErr["code"])
	require.Contains(t, rpcErr["message"], "/note")
	_, res, _ := answer(3, "other", map[string]any{"approved": false})
	require.Equal(t, map[string]any{"resultType": "complete"}, res)
	require.Equal(t, "input_required", f.rpcResult(t, extTask(4, "tasks/get", taskID, nil))["status"], "still asking")

	_, res, _ = answer(5, "approve", map[string]any{"approved": true, "note": "ok"})
	require.Equal(t, map[string]any{"resultType": "complete"}, res)
	require.NotEqual(t, "input_required", f.rpcResult(t, extTask(7, "tasks/get", taskID, nil))["status"],
		"once acknowledged, the answered question is not shown again")
	var got map[string]any
	require.Eventually(t, func() bool {
		got = f.rpcResult(t, extTask(6, "tasks/get", taskID, nil))
		return got["status"] == "completed"
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, map[string]any{"approved": true, "note": "ok"}, got["result"].(map[string]any)["structuredContent"].(map[string]any)["output"])
	require.Equal(t, 1, f.engineRun(t, taskID).Steps[0].Attempts, "the hook took one answer")
}

// TestTaskTTL: a task is there up to TaskTTL after its run was created and gone one
// millisecond later, for both protocol eras; the run stays.
func TestTaskTTL(t *testing.T) {
	var at atomic.Pointer[time.Time] // the server's clock; nil is the real one
	f := newFixtureConfig(t, &mcpserver.Config{PageSize: 2, Now: func() time.Time {
		if p := at.Load(); p != nil {
			return *p
		}
		return time.Now()
	}}, greetDef)
	setClock := func(t time.Time) { at.Store(&t) }
	s := f.openSession(t)
	taskID := s.ok(t, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}, "task": map[string]any{}})["task"].(map[string]any)["taskId"].(string)
	created := f.engineRun(t, taskID).CreatedAt
	done, err := f.engine.Wait(t.Context(), taskID, time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, "completed", done.Status, "the run ends before the clock moves")

	setClock(created.Add(mcpserver.TaskTTL))
	require.Equal(t, taskID, s.ok(t, "tasks/get", map[string]any{"taskId": taskID})["taskId"], "at its ttl")
	require.Len(t, s.ok(t, "tasks/list", nil)["tasks"], 1)
	require.Equal(t, taskID, f.rpcResult(t, extTask(1, "tasks/get", taskID, nil))["taskId"])

	setClock(created.Add(mcpserver.TaskTTL + time.Millisecond))
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		_, rpcErr := s.do(t, method, map[string]any{"taskId": taskID})
		require.NotNil(t, rpcErr, method)
		require.EqualValues(t, -32602, rpcErr["code"])
		require.Contains(t, rpcErr["message"], "ttl has expired")
	}
	require.Empty(t, s.ok(t, "tasks/list", nil)["tasks"], "one past its ttl")
	status, _, rpcErr := f.rpcAnswer(t, extTask(2, "tasks/get", taskID, nil))
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, rpcErr["message"], "ttl has expired")
	require.EqualValues(t, "completed", f.engineRun(t, taskID).Status, "the run stays")
}

// TestTasksExtensionInvalidAnswers: an answer through tasks/update that does not fit is
// refused and the question asked again, at most MaxAskAttempts times, as for a tool call's
// question: a fitting answer before the last resumes the run; after the last, the question
// is withdrawn — the task is working, waiting on the hook, further answers are ignored —
// and the hook takes the REST resume.
func TestTasksExtensionInvalidAnswers(t *testing.T) {
	wrong := map[string]any{"approved": true, "note": "far too long"}
	for _, misses := range []int{mcpserver.MaxAskAttempts - 1, mcpserver.MaxAskAttempts} {
		t.Run(fmt.Sprint(misses, " wrong answers"), func(t *testing.T) {
			f := newFixture(t, askDef)
			orderID := fmt.Sprint("w", misses)
			created := f.rpcResult(t, extRequest(1, "tools/call", "ask", map[string]any{"name": "ask", "arguments": map[string]any{"orderId": orderID}}))
			require.Equal(t, "input_required", created["status"])
			taskID := created["taskId"].(string)
			answer := func(id int, content map[string]any) (int, map[string]any, map[string]any) {
				return f.rpcAnswer(t, extTask(id, "tasks/update", taskID, map[string]any{
					"inputResponses": map[string]any{"approve": map[string]any{"action": "accept", "content": content}}}))
			}
			for i := 1; i <= misses; i++ {
				status, _, rpcErr := answer(10+i, wrong)
				require.Equal(t, http.StatusBadRequest, status)
				require.EqualValues(t, -32602, rpcErr["code"])
				require.Contains(t, rpcErr["message"], "/note")
				got := f.rpcResult(t, extTask(20+i, "tasks/get", taskID, nil))
				if i < mcpserver.MaxAskAttempts {
					require.Contains(t, rpcErr["message"], "Answer again", "wrong answer %d", i)
					require.Equal(t, "input_required", got["status"], "asked again after wrong answer %d", i)
					require.Contains(t, got["inputRequests"], "approve")
					continue
				}
				require.Contains(t, rpcErr["message"], "withdrawn")
				require.Equal(t, "working", got["status"], "no longer asked after %d wrong answers", i)
				require.NotContains(t, got, "inputRequests")
				require.Equal(t, "step 1/2 approve (hook): waiting on hook ask:"+orderID+mcpserver.ResumeHint, got["statusMessage"])
			}
			_, res, _ := answer(30, map[string]any{"approved": true, "note": "mcp"})
			require.Equal(t, map[string]any{"resultType": "complete"}, res)
			if misses >= mcpserver.MaxAskAttempts {
				require.EqualValues(t, "waiting", f.engineRun(t, taskID).Status, "an answer to the withdrawn question is ignored")
				rest, body := f.rest("POST", "/api/hooks/ask:"+orderID+"/resume", map[string]any{"approved": true, "note": "rest"}, http.Header{})
				require.Less(t, rest.StatusCode, 300, "%v", body)
			}
			require.Eventually(t, func() bool { return f.engineRun(t, taskID).Status == "completed" }, 20*time.Second, 20*time.Millisecond)
			want := map[string]any{"approved": true, "note": "mcp"}
			if misses >= mcpserver.MaxAskAttempts {
				want["note"] = "rest"
			}
			got := f.rpcResult(t, extTask(40, "tasks/get", taskID, nil))
			require.Equal(t, "completed", got["status"])
			require.Equal(t, want, got["result"].(map[string]any)["structuredContent"].(map[string]any)["output"])
			require.Equal(t, 1, f.engineRun(t, taskID).Steps[0].Attempts, "the hook took one answer")
		})
	}
}
