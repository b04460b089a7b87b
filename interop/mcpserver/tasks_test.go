package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
)

const (
	napDef = `{"name":"nap","input":{"type":"object","properties":{"n":{"type":"integer"}}},
		"steps":[{"id":"rest","sleep":{"duration":"300ms"}},{"id":"done","set":{"n":"${{ input.n }}"}}]}`
	askDef = `{"name":"ask","input":{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]},
		"steps":[{"id":"approve","hook":{"token":"ask:${{ input.orderId }}","ask":{"message":"Charge order ${{ input.orderId }}?",
		"schema":{"type":"object","properties":{"approved":{"type":"boolean"},"note":{"type":"string","maxLength":5}},"required":["approved"]}}}},
		{"id":"done","set":"${{ steps.approve.output }}"}]}`
)

// rpcSession is a raw streamable HTTP session: what a client without an SDK sends.
type rpcSession struct {
	f  *fixture
	id string
	n  int
	// query follows /mcp: the session's environment.
	query string
}

// openSession initializes a session over raw JSON-RPC (protocol 2025-11-25).
func (f *fixture) openSession(t *testing.T) *rpcSession {
	t.Helper()
	return f.openSessionWith(t, map[string]any{})
}

// openSessionWith is openSession for a client declaring capabilities.
func (f *fixture) openSessionWith(t *testing.T, capabilities map[string]any) *rpcSession {
	t.Helper()
	return f.openSessionAt(t, "", capabilities)
}

// openSessionAt is openSessionWith at /mcp+query.
func (f *fixture) openSessionAt(t *testing.T, query string, capabilities map[string]any) *rpcSession {
	t.Helper()
	res, err := f.post(context.Background(), rpcRequest{query: query, body: map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": map[string]any{"name": "raw", "version": "1"},
	}}})
	require.NoError(t, err)
	payload := readMessage(t, res)
	res.Body.Close()
	var init struct {
		Result struct {
			Capabilities map[string]any `json:"capabilities"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(payload, &init))
	tasks := init.Result.Capabilities["tasks"].(map[string]any)
	require.Contains(t, tasks, "list")
	require.Contains(t, tasks, "cancel")
	require.Equal(t, map[string]any{"tools": map[string]any{"call": map[string]any{}}}, tasks["requests"])
	s := &rpcSession{f: f, id: res.Header.Get("Mcp-Session-Id"), query: query}
	require.NotEmpty(t, s.id)
	res, err = f.post(context.Background(), rpcRequest{query: query, header: s.header(), body: map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}})
	require.NoError(t, err)
	res.Body.Close()
	return s
}

func (s *rpcSession) header() http.Header {
	return http.Header{"Mcp-Session-Id": {s.id}, "Mcp-Protocol-Version": {"2025-11-25"}}
}

// do sends one request and returns its result, or its error object.
func (s *rpcSession) do(t *testing.T, method string, params map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	s.n++
	res, err := s.f.post(context.Background(), rpcRequest{query: s.query, header: s.header(), body: map[string]any{"jsonrpc": "2.0", "id": s.n, "method": method, "params": params}})
	require.NoError(t, err)
	defer res.Body.Close()
	var msg struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	payload := readMessage(t, res)
	require.NoError(t, json.Unmarshal(payload, &msg), "%s", payload)
	return msg.Result, msg.Error
}

func (s *rpcSession) ok(t *testing.T, method string, params map[string]any) map[string]any {
	t.Helper()
	res, rpcErr := s.do(t, method, params)
	require.Nil(t, rpcErr)
	return res
}

func TestTasksOverHTTP(t *testing.T) {
	f := newFixture(t, napDef, approveDef)
	s := f.openSession(t)

	listed := s.ok(t, "tools/list", nil)
	for _, tool := range listed["tools"].([]any) {
		tool := tool.(map[string]any)
		if tool["name"] == "nap" {
			require.Equal(t, map[string]any{"taskSupport": "optional"}, tool["execution"])
		}
	}

	created := s.ok(t, "tools/call", map[string]any{"name": "nap", "arguments": map[string]any{"n": 7}, "task": map[string]any{"ttl": 60000}})
	task := created["task"].(map[string]any)
	taskID := task["taskId"].(string)
	require.Equal(t, "working", task["status"])
	require.Equal(t, float64(24*time.Hour/time.Millisecond), task["ttl"])
	require.Equal(t, float64(2000), task["pollInterval"])
	require.NotEmpty(t, task["createdAt"])
	_, rest := f.rest("GET", "/api/runs/"+taskID, nil, http.Header{})
	require.Equal(t, "nap", rest["data"].(map[string]any)["workflow"], "taskId is the run ID")

	got := s.ok(t, "tasks/get", map[string]any{"taskId": taskID})
	require.Equal(t, taskID, got["taskId"])
	require.Contains(t, []any{"working", "completed"}, got["status"])

	result := s.ok(t, "tasks/result", map[string]any{"taskId": taskID})
	require.Equal(t, map[string]any{"n": float64(7)}, result["structuredContent"].(map[string]any)["output"])
	require.Equal(t, map[string]any{"taskId": taskID}, result["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"])
	require.Equal(t, "completed", s.ok(t, "tasks/get", map[string]any{"taskId": taskID})["status"])

	waiting := s.ok(t, "tools/call", map[string]any{"name": "approve", "arguments": map[string]any{"orderId": "t1"}, "task": map[string]any{}})["task"].(map[string]any)
	require.Eventually(t, func() bool {
		got := s.ok(t, "tasks/get", map[string]any{"taskId": waiting["taskId"]})
		return got["status"] == "working" && got["statusMessage"] == "step 1/2 confirm (hook): waiting on hook order:t1"+mcpserver.ResumeHint
	}, 5*time.Second, 20*time.Millisecond)

	page := s.ok(t, "tasks/list", nil)
	var ids []any
	for _, tk := range page["tasks"].([]any) {
		ids = append(ids, tk.(map[string]any)["taskId"])
	}
	require.Equal(t, []any{waiting["taskId"], taskID}, ids, "newest first")

	cancelled := s.ok(t, "tasks/cancel", map[string]any{"taskId": waiting["taskId"]})
	require.Equal(t, "cancelled", cancelled["status"])
	_, rpcErr := s.do(t, "tasks/cancel", map[string]any{"taskId": waiting["taskId"]})
	require.Equal(t, float64(-32602), rpcErr["code"])
	require.Contains(t, rpcErr["message"], "already cancelled")

	_, rpcErr = s.do(t, "tasks/get", map[string]any{"taskId": "0190c0de-0000-7000-8000-000000000000"})
	require.Equal(t, float64(-32602), rpcErr["code"])
	_, rpcErr = s.do(t, "tools/call", map[string]any{"name": "nap", "arguments": map[string]any{"n": "x"}, "task": map[string]any{}})
	require.Equal(t, float64(-32602), rpcErr["code"])
	require.True(t, strings.Contains(rpcErr["message"].(string), "input schema"))
	// A task call's key that is not a string is listed with the input's own problem.
	_, rpcErr = s.do(t, "tools/call", map[string]any{"name": "nap", "arguments": map[string]any{"n": "x", "idempotencyKey": nil}, "task": map[string]any{}})
	require.Equal(t, float64(-32602), rpcErr["code"])
	var paths []any
	for _, p := range rpcErr["data"].([]any) {
		paths = append(paths, p.(map[string]any)["path"])
	}
	require.Equal(t, []any{"/idempotencyKey", "/n"}, paths)
}

func TestTaskReplayedKeyIsTheSameTask(t *testing.T) {
	f := newFixture(t, approveDef)
	s := f.openSession(t)
	args := map[string]any{"orderId": "k1", "idempotencyKey": "key-1"}
	first := s.ok(t, "tools/call", map[string]any{"name": "approve", "arguments": args, "task": map[string]any{}})["task"].(map[string]any)
	again := s.ok(t, "tools/call", map[string]any{"name": "approve", "arguments": args, "task": map[string]any{}})["task"].(map[string]any)
	require.Equal(t, first["taskId"], again["taskId"])
}

func TestTaskAnsweredByAnotherProcess(t *testing.T) {
	f := newFixture(t, napDef, approveDef)
	g := f.twin()
	created := f.openSession(t).ok(t, "tools/call", map[string]any{"name": "nap", "arguments": map[string]any{"n": 1}, "task": map[string]any{}})
	taskID := created["task"].(map[string]any)["taskId"]
	other := g.openSession(t)
	require.Equal(t, taskID, other.ok(t, "tasks/get", map[string]any{"taskId": taskID})["taskId"])
	result := other.ok(t, "tasks/result", map[string]any{"taskId": taskID})
	require.Equal(t, map[string]any{"n": float64(1)}, result["structuredContent"].(map[string]any)["output"])

	mine := f.openSession(t)
	waiting := mine.ok(t, "tools/call", map[string]any{"name": "approve", "arguments": map[string]any{"orderId": "x"}, "task": map[string]any{}})["task"].(map[string]any)
	require.Contains(t, []any{"working", "cancelled"}, other.ok(t, "tasks/cancel", map[string]any{"taskId": waiting["taskId"]})["status"])
	require.Eventually(t, func() bool {
		return mine.ok(t, "tasks/get", map[string]any{"taskId": waiting["taskId"]})["status"] == "cancelled"
	}, 20*time.Second, 50*time.Millisecond, "the process that created the task sees it cancelled")
}

func TestTaskRequestWithAForeignSessionIsRefused(t *testing.T) {
	f := newFixture(t, napDef)
	mine := f.openSession(t)
	res := f.raw(f.mint("admin"), http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`, "Mcp-Session-Id", mine.id)
	require.Equal(t, http.StatusNotFound, res.StatusCode, "another principal's session ID")
}

// TestTaskStatusMapping: each run state as SPEC §5 maps it to a task status, with a
// statusMessage saying the step ("step 3/7 charge (http)"), and for a failed run the step
// that failed with the run's error.
func TestTaskStatusMapping(t *testing.T) {
	failLate := `{"name":"faillate","input":{"type":"object"},"steps":[{"id":"ok","set":1},{"id":"charge","fail":{"message":"card declined","code":"DECLINED"}},{"id":"after","set":2}]}`
	f := newFixture(t, outlivesDef, approveDef, askDef, failLate)
	s := f.openSession(t)
	tests := []struct {
		name, tool      string
		args            map[string]any
		status, message string
	}{
		{"running", "outlives", map[string]any{}, "working", "step 1/2 rest (sleep)"},
		{"waiting on a hook", "approve", map[string]any{"orderId": "m1"}, "working", "step 1/2 confirm (hook): waiting on hook order:m1" + mcpserver.ResumeHint},
		{"waiting on a hook that asks", "ask", map[string]any{"orderId": "m2"}, "input_required", "step 1/2 approve (hook): waiting on hook ask:m2" + mcpserver.ResumeHint},
		{"failed", "faillate", map[string]any{}, "failed", "step 2/3 charge (fail): card declined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			taskID := s.ok(t, "tools/call", map[string]any{"name": tc.tool, "arguments": tc.args, "task": map[string]any{}})["task"].(map[string]any)["taskId"]
			var got map[string]any
			require.Eventually(t, func() bool {
				got = s.ok(t, "tasks/get", map[string]any{"taskId": taskID})
				return got["status"] == tc.status && got["statusMessage"] == tc.message
			}, 10*time.Second, 10*time.Millisecond, "last seen %v", got)
		})
	}
}

// taskIDs are the taskIds of a tasks/list page, in order.
func taskIDs(page map[string]any) []any {
	ids := []any{}
	for _, tk := range page["tasks"].([]any) {
		ids = append(ids, tk.(map[string]any)["taskId"])
	}
	return ids
}

// startTask starts a task of greet in s's environment and returns its taskId.
func (s *rpcSession) startTask(t *testing.T, name string) any {
	t.Helper()
	return s.ok(t, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": name}, "task": map[string]any{}})["task"].(map[string]any)["taskId"]
}

func TestTaskListPages(t *testing.T) {
	f := newFixture(t, greetDef)
	s := f.openSession(t)
	var want []any
	for i := range mcpserver.TaskListPage + 1 {
		want = append([]any{s.startTask(t, fmt.Sprint("Ada", i))}, want...)
		_, err := f.engine.Submit(context.Background(), runner.SubmitParams{Workflow: "greet", Environment: runner.EnvProduction,
			Input: json.RawMessage(`{"name":"Ada"}`), By: &auth.Principal{ID: f.principal, Scopes: auth.AdminScopes()}})
		require.NoError(t, err, "a run that is not a task, started between the tasks")
	}
	first := s.ok(t, "tasks/list", nil)
	require.Len(t, first["tasks"], mcpserver.TaskListPage)
	require.NotEmpty(t, first["nextCursor"])
	second := s.ok(t, "tasks/list", map[string]any{"cursor": first["nextCursor"]})
	require.Len(t, second["tasks"], 1)
	require.NotContains(t, second, "nextCursor")
	require.Equal(t, want, append(taskIDs(first), taskIDs(second)...), "every task once, newest first")
}

// TestTaskListShowsTheSessionsTaskRuns: tasks/list lists the caller's task runs of the
// session's environment only: not the runs of plain tool calls, of REST or of another
// principal (even one that may read them), nor the tasks of the other environment.
func TestTaskListShowsTheSessionsTaskRuns(t *testing.T) {
	f := newFixture(t, greetDef)
	prod := f.openSession(t)
	test := f.openSessionAt(t, "?environment=test", map[string]any{})
	first := prod.startTask(t, "one")
	testTask := test.startTask(t, "draft")
	plain := prod.ok(t, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "plain"}})
	require.NotContains(t, plain, "task", "a plain call answers its result")
	res, body := f.rest("POST", "/api/workflows/greet/run", map[string]any{"name": "rest"}, http.Header{})
	require.Equal(t, http.StatusAccepted, res.StatusCode, "%v", body)
	admin := *f
	admin.token = f.mint("admin")
	theirs := admin.openSession(t).startTask(t, "theirs")
	second := prod.startTask(t, "two")

	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Len(t, runs, 6, "every run was started")
	tests := []struct {
		name    string
		session *rpcSession
		want    []any
	}{
		{"production", prod, []any{second, first}},
		{"test", test, []any{testTask}},
		{"another principal", admin.openSession(t), []any{theirs}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page := tc.session.ok(t, "tasks/list", nil)
			require.Equal(t, tc.want, taskIDs(page))
			require.NotContains(t, page, "nextCursor")
		})
	}
}

// TestTasksOfAnotherPrincipalAreNotFound: a token that may not read a run sees no task for
// it, lists none of it, cannot cancel it and cannot read its resource.
func TestTasksOfAnotherPrincipalAreNotFound(t *testing.T) {
	f := newFixture(t, napDef)
	mine := f.openSession(t)
	taskID := mine.ok(t, "tools/call", map[string]any{"name": "nap", "arguments": map[string]any{"n": 1}, "task": map[string]any{}})["task"].(map[string]any)["taskId"]
	stranger := *f
	stranger.token = f.mint("runs:write:workflow=other", "runs:read:workflow=other")
	theirs := stranger.openSession(t)
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		_, rpcErr := theirs.do(t, method, map[string]any{"taskId": taskID})
		require.NotNil(t, rpcErr, method)
		require.NotContains(t, rpcErr["message"], "nap", method)
	}
	require.Empty(t, theirs.ok(t, "tasks/list", nil)["tasks"])
	_, rpcErr := theirs.do(t, "resources/read", map[string]any{"uri": "gorunner://runs/" + taskID.(string)})
	require.NotNil(t, rpcErr)
	require.Len(t, mine.ok(t, "tasks/list", nil)["tasks"], 1, "the owner still lists it")
}

// Hostile task params are invalid params (-32602), never an internal error: a taskId that
// is not a string, a cursor the store never gave out, a huge ttl (ignored: every task
// reports TaskTTL).
func TestTaskHostileParams(t *testing.T) {
	f := newFixture(t, napDef)
	s := f.openSession(t)

	for _, params := range []map[string]any{{"taskId": 42}, {"taskId": map[string]any{"x": 1}}, {"taskId": ""}, {}} {
		_, rpcErr := s.do(t, "tasks/get", params)
		require.NotNil(t, rpcErr, "%v", params)
		require.EqualValues(t, -32602, rpcErr["code"], "%v", params)
	}
	_, rpcErr := s.do(t, "tasks/list", map[string]any{"cursor": "not-a-cursor"})
	require.NotNil(t, rpcErr)
	require.EqualValues(t, -32602, rpcErr["code"])

	created := s.ok(t, "tools/call", map[string]any{"name": "nap", "arguments": map[string]any{"n": 1}, "task": map[string]any{"ttl": 1e300}})
	require.EqualValues(t, mcpserver.TaskTTL.Milliseconds(), created["task"].(map[string]any)["ttl"])
}
