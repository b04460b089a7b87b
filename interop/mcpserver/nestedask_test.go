package mcpserver_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// nestedAskDef asks from hooks nested in both branches of a parallel, then from each
// iteration of a foreach, so that two questions wait at once twice.
const nestedAskDef = `{"name":"nested-ask","input":{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]},
	"steps":[
		{"id":"both","parallel":{"branches":[
			{"id":"left","steps":[{"id":"approve","hook":{"token":"left:${{ input.orderId }}","ask":{"message":"Left of ${{ input.orderId }}?","schema":` + approvedSchema + `}}}]},
			{"id":"right","steps":[{"id":"approve","hook":{"token":"right:${{ input.orderId }}","ask":{"message":"Right of ${{ input.orderId }}?","schema":` + approvedSchema + `}}}]}]}},
		{"id":"each","foreach":{"items":["a","b"],"concurrency":2,"steps":[
			{"id":"approve","hook":{"token":"each:${{ input.orderId }}:${{ item }}","ask":{"message":"Item ${{ item }} of ${{ input.orderId }}?","schema":` + approvedSchema + `}}}]}}],
	"result":{"both":"${{ steps.both.output }}","each":"${{ steps.each.output }}"}}`

const approvedSchema = `{"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"]}`

// nestedQuestions are nestedAskDef's questions in the order they are put, each with its
// hook's path (its key among a task's input requests) and token, for order o.
func nestedQuestions(o string) [][3]string {
	return [][3]string{
		{"both/left/approve", "left:" + o, "Left of " + o + "?"},
		{"both/right/approve", "right:" + o, "Right of " + o + "?"},
		{"each/0/approve", "each:" + o + ":a", "Item a of " + o + "?"},
		{"each/1/approve", "each:" + o + ":b", "Item b of " + o + "?"},
	}
}

// nestedOutput is nestedAskDef's output once every question was answered approved.
var nestedOutput = map[string]any{
	"both": map[string]any{"left": map[string]any{"approved": true}, "right": map[string]any{"approved": true}},
	"each": []any{map[string]any{"approved": true}, map[string]any{"approved": true}},
}

// TestElicitationNestedHooks: hooks that ask from a parallel's branches and a foreach's
// iterations are put to a client that elicits as a top-level one is, one after another in
// record order while several wait at once, within one tool call; every answer reaches its
// own hook.
func TestElicitationNestedHooks(t *testing.T) {
	f := newFixture(t, nestedAskDef)
	a := &asker{answers: []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"approved": true}}}}
	_, got := call(t, f.connectAsker(a), "nested-ask", map[string]any{"orderId": "n1"})
	require.Equal(t, "completed", got["status"], "%v", got)
	require.Equal(t, nestedOutput, got["output"])
	var asked []string
	for _, q := range nestedQuestions("n1") {
		asked = append(asked, q[2])
	}
	require.Equal(t, asked, a.messages, "each hook asked once, one after another")
}

// TestNestedHooksWaitingOn: without elicitation, waitingOn shows the nested hook asked
// first, with its question, and the next one once it is answered; a resume of a nested
// hook not shown is held to that hook's own schema too.
func TestNestedHooksWaitingOn(t *testing.T) {
	f := newFixture(t, nestedAskDef)
	session, _ := f.connect("")
	_, got := call(t, session, "nested-ask", map[string]any{"orderId": "n2"})
	questions := nestedQuestions("n2")
	for i, q := range questions {
		require.Equal(t, "waiting", got["status"], "%v", got)
		hook := got["waitingOn"].(map[string]any)["hook"].(map[string]any)
		require.Equal(t, q[1], hook["token"], "question %d", i)
		require.Equal(t, q[2], hook["message"])
		if i+1 < len(questions) {
			res, _ := call(t, session, "gorunner_resume_hook", map[string]any{"token": questions[i+1][1], "payload": map[string]any{"approved": "yes"}})
			require.True(t, res.IsError, "the next hook's schema holds: %s", text(res))
		}
		call(t, session, "gorunner_resume_hook", map[string]any{"token": q[1], "payload": map[string]any{"approved": true}})
		runID := got["runId"].(string)
		require.Eventually(t, func() bool {
			_, got = call(t, session, "gorunner_get_run", map[string]any{"runId": runID})
			on, _ := got["waitingOn"].(map[string]any)
			hook, _ := on["hook"].(map[string]any)
			return got["status"] == "completed" || (hook != nil && hook["token"] != q[1])
		}, 10*time.Second, 20*time.Millisecond)
	}
	require.Equal(t, "completed", got["status"])
	require.Equal(t, nestedOutput, got["output"])
}

// TestTasksExtensionNestedHooks: a task whose run waits on nested hooks that ask is
// input_required with one question at a time, keyed by the hook's path, which tasks/update
// answers; then the next one is asked, until the task completes.
func TestTasksExtensionNestedHooks(t *testing.T) {
	f := newFixture(t, nestedAskDef)
	created := f.rpcResult(t, extRequest(1, "tools/call", "nested-ask", map[string]any{"name": "nested-ask", "arguments": map[string]any{"orderId": "n3"}}))
	taskID := created["taskId"].(string)
	task, id := created, 2
	for i, q := range nestedQuestions("n3") {
		require.Eventually(t, func() bool {
			requests, _ := task["inputRequests"].(map[string]any)
			_, asking := requests[q[0]]
			if !asking {
				task, id = f.rpcResult(t, extTask(id, "tasks/get", taskID, nil)), id+1
			}
			return asking
		}, 10*time.Second, 20*time.Millisecond, "question %d", i)
		require.Equal(t, "input_required", task["status"])
		requests := task["inputRequests"].(map[string]any)
		require.Len(t, requests, 1, "one question at a time")
		require.Equal(t, q[2], requests[q[0]].(map[string]any)["params"].(map[string]any)["message"])
		status, _, rpcErr := f.rpcAnswer(t, extTask(id, "tasks/update", taskID, map[string]any{
			"inputResponses": map[string]any{q[0]: map[string]any{"action": "accept", "content": map[string]any{"approved": true}}}}))
		require.Equal(t, http.StatusOK, status, "%v", rpcErr)
		id++
	}
	require.Eventually(t, func() bool {
		task, id = f.rpcResult(t, extTask(id, "tasks/get", taskID, nil)), id+1
		return task["status"] == "completed"
	}, 10*time.Second, 20*time.Millisecond, fmt.Sprint(task))
	require.Equal(t, nestedOutput, task["result"].(map[string]any)["structuredContent"].(map[string]any)["output"])
}
