package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/tools"
)

// gateDef holds one run at a time (concurrency limit 1, the workflow's one key), each
// waiting at a gate of its own until resumed.
const gateDef = `{"name":"gate","toolTimeout":"1s","concurrency":{"limit":1},"input":{"type":"object"},
	"steps":[{"id":"gate","hook":{"token":"gate:${{ run.id }}"}},{"id":"done","set":"through"}]}`

// TestToolCallOnQueuedRun: with the official Go SDK client, a tool call whose run is over
// its workflow's concurrency limit waits as for a running one and, its toolTimeout run out,
// answers status queued with the run's ID and where it stands; once the run holding the slot
// ends, the queued run starts, and gorunner_get_run follows it to its own gate.
func TestToolCallOnQueuedRun(t *testing.T) {
	f := newFixture(t, gateDef)
	session, _ := f.connect("")
	_, first := call(t, session, "gate", map[string]any{})
	require.Equal(t, "waiting", first["status"], "%v", first)

	_, second := call(t, session, "gate", map[string]any{})
	require.Equal(t, "queued", second["status"], "%v", second)
	require.NotEmpty(t, second["runId"])
	_, got := call(t, session, "gorunner_get_run", map[string]any{"runId": second["runId"]})
	require.Equal(t, "queued", got["status"], "%v", got)
	queue := got["waitingOn"].(map[string]any)["queue"].(map[string]any)
	require.Equal(t, []any{first["runId"]}, queue["active"])
	require.EqualValues(t, 0, queue["ahead"])

	res, sent := call(t, session, tools.ResumeHook, map[string]any{"token": "gate:" + first["runId"].(string), "payload": map[string]any{}})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "delivered", sent["delivery"])
	_, got = call(t, session, "gorunner_get_run", map[string]any{"runId": second["runId"], "waitSeconds": 20})
	require.Equal(t, "waiting", got["status"], "%v", got)
	require.Equal(t, "gate:"+second["runId"].(string), got["waitingOn"].(map[string]any)["hook"].(map[string]any)["token"])
}
