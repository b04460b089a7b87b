package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/tools"
)

// dozeDef sleeps two seconds.
const dozeDef = `{"name":"doze","input":{"type":"object"},
	"steps":[{"id":"rest","sleep":{"duration":"2s"}},{"id":"done","set":"awake"}]}`

// coolDef is an approval as the approval example is one (a start token held for the whole
// run, a hook that asks, then a cool-off sleep), named name, cooling off for coolOff.
func coolDef(name, coolOff string) string {
	return fmt.Sprintf(`{"name":%q,"input":{"type":"object","properties":{"requestId":{"type":"string"}},"required":["requestId"]},
		"start":{"token":"%s:${{ input.requestId }}","onConflict":"adopt"},
		"steps":[{"id":"decision","hook":{"token":"%s:${{ input.requestId }}","ask":{"message":"Approve request ${{ input.requestId }}?",
			"schema":{"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"]}}}},
		{"id":"cool-off","sleep":{"duration":%q}},
		{"id":"answer","set":{"approved":"${{ steps.decision.output.approved }}"}}]}`, name, name, name, coolOff)
}

// TestShortSleepInOneCall: with the official Go SDK client, a 2-second sleep workflow's
// result comes in the tool call itself, and gorunner_get_run's wait holds for it too.
func TestShortSleepInOneCall(t *testing.T) {
	f := newFixture(t, dozeDef)
	session, _ := f.connect("")
	_, got := call(t, session, "doze", map[string]any{})
	require.Equal(t, "completed", got["status"], "%v", got)
	require.Equal(t, "awake", got["output"])

	run := f.admit(t, "doze")
	_, got = call(t, session, "gorunner_get_run", map[string]any{"runId": run, "waitSeconds": 20})
	require.Equal(t, "completed", got["status"], "%v", got)
}

// admit admits a run of workflow over REST and returns its ID, so that a tool call can wait
// on a run it did not start.
func (f *fixture) admit(t *testing.T, workflow string) string {
	t.Helper()
	_, body := f.rest("POST", "/api/workflows/"+workflow+"/run", map[string]any{}, http.Header{})
	return body["data"].(map[string]any)["id"].(string)
}

// TestResumeHookChecked: with the official Go SDK client (no elicitation), the question is
// in waitingOn.hook; gorunner_resume_hook refuses a payload that does not fit the ask (a
// typo), naming the pointer and delivering nothing; the right one is delivered and the
// answer shows the run after it (the cool-off waited for); a second resume while no step
// waits is queued, said so, and kept on the run once it ends.
func TestResumeHookChecked(t *testing.T) {
	f := newFixture(t, coolDef("cool", "1s"))
	session, _ := f.connect("")
	_, got := call(t, session, "cool", map[string]any{"requestId": "r1"})
	require.Equal(t, "waiting", got["status"])
	hook := got["waitingOn"].(map[string]any)["hook"].(map[string]any)
	require.Equal(t, map[string]any{"token": "cool:r1", "message": "Approve request r1?",
		"schema": map[string]any{"type": "object", "properties": map[string]any{"approved": map[string]any{"type": "boolean"}}, "required": []any{"approved"}}}, hook)

	msg := callError(t, session, tools.ResumeHook, map[string]any{"token": "cool:r1", "payload": map[string]any{"approve": "yes"}})
	require.Contains(t, msg, "VALIDATION_ERROR")
	require.Contains(t, msg, "approved")
	msg = callError(t, session, tools.ResumeHook, map[string]any{"token": "cool:r1", "payload": map[string]any{"approved": "yes"}})
	require.Contains(t, msg, `"path":"/approved"`)
	_, still := call(t, session, "gorunner_get_run", map[string]any{"runId": got["runId"]})
	require.Equal(t, "waiting", still["status"], "nothing was delivered")
	require.Equal(t, "cool:r1", still["waitingOn"].(map[string]any)["hook"].(map[string]any)["token"])

	res, sent := call(t, session, tools.ResumeHook, map[string]any{"token": "cool:r1", "payload": map[string]any{"approved": true}})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "delivered", sent["delivery"])
	require.Equal(t, "completed", sent["status"], "the answer shows the run after the payload and the cool-off: %v", sent)
	require.Equal(t, map[string]any{"approved": true}, sent["output"])

}

// TestSecondResumeQueued: with the official Go SDK client, a second resume of an approval
// cooling off (its token still held, no hook step waiting) is answered queued with a
// message, changes nothing, and is kept on the run as undeliveredPayloads once it ends.
func TestSecondResumeQueued(t *testing.T) {
	f := newFixture(t, coolDef("slow", "6s")) // longer than runner.ResumeWait
	session, _ := f.connect("")
	_, got := call(t, session, "slow", map[string]any{"requestId": "r1"})
	_, first := call(t, session, tools.ResumeHook, map[string]any{"token": "slow:r1", "payload": map[string]any{"approved": true}})
	require.Equal(t, "delivered", first["delivery"])
	require.Equal(t, "waiting", first["status"], "a sleep past the resume's wait: answered early, %v", first)
	require.Contains(t, first["waitingOn"], "sleepUntil")

	_, again := call(t, session, tools.ResumeHook, map[string]any{"token": "slow:r1", "payload": map[string]any{"approved": false}})
	require.Equal(t, "queued", again["delivery"], "%v", again)
	require.Contains(t, again["message"], "no hook step waits on token")
	_, done := call(t, session, "gorunner_get_run", map[string]any{"runId": got["runId"], "waitSeconds": 20})
	require.Equal(t, "completed", done["status"])
	require.Equal(t, map[string]any{"approved": true}, done["output"], "the queued payload changed nothing")

	read, err := session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: tools.RunURI(got["runId"].(string))})
	require.NoError(t, err)
	var run map[string]any
	require.NoError(t, json.Unmarshal([]byte(read.Contents[0].Text), &run))
	require.Equal(t, []any{map[string]any{"token": "slow:r1", "payload": map[string]any{"approved": false}}}, run["undeliveredPayloads"])
}

// extNoElicitation is extRequest from a client that declared the tasks extension but not
// elicitation (the MCP Inspector CLI).
func extNoElicitation(id int, method, name string, params map[string]any) rpcRequest {
	r := extRequest(id, method, name, params)
	delete(r.body["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/clientCapabilities"].(map[string]any), "elicitation")
	return r
}

// TestTasksExtensionWithoutElicitation: under 2026-07-28, a client with the tasks extension
// but without elicitation is never asked: its task is working, with statusMessage naming
// the hook and how to resume it, and no input request; resuming as it says ends the task.
// The question keeps the same key (the step's ID) that an eliciting client is asked under.
func TestTasksExtensionWithoutElicitation(t *testing.T) {
	f := newFixture(t, askDef)
	created := f.rpcResult(t, extNoElicitation(1, "tools/call", "ask", map[string]any{"name": "ask", "arguments": map[string]any{"orderId": "n1"}}))
	require.Equal(t, "task", created["resultType"])
	want := "step 1/2 approve (hook): waiting on hook ask:n1" + mcpserver.ResumeHint
	taskID := created["taskId"].(string)
	polled := f.rpcResult(t, extNoElicitation(2, "tasks/get", taskID, map[string]any{"taskId": taskID}))
	for _, task := range []map[string]any{created, polled} {
		require.Equal(t, "working", task["status"], "%v", task)
		require.Equal(t, want, task["statusMessage"])
		require.NotContains(t, task, "inputRequests")
	}
	asked := f.rpcResult(t, extTask(9, "tasks/get", taskID, nil))
	require.Equal(t, "input_required", asked["status"], "a client that elicits is asked")
	require.Contains(t, asked["inputRequests"], "approve", "under the step's ID, as a tool call's question is keyed")

	res, body := f.rest("POST", "/api/hooks/ask:n1/resume", map[string]any{"approved": true}, http.Header{})
	require.Equal(t, http.StatusAccepted, res.StatusCode, "%v", body)
	var got map[string]any
	require.Eventually(t, func() bool {
		got = f.rpcResult(t, extNoElicitation(10, "tasks/get", taskID, map[string]any{"taskId": taskID}))
		return got["status"] == "completed"
	}, 10*time.Second, 20*time.Millisecond, "last seen %v", got)
}
