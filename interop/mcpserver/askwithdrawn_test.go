package mcpserver_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
)

// TestAskWithdrawnAcrossProcesses: two processes share the store (SQLite, Redis). The
// answers to a task's question that do not fit count together whichever process takes
// them: the MaxAskAttempts-th withdraws the question for both — tasks/get on each shows
// input_required before it and working after it — and the session that created the task
// on the other process hears of the withdrawal (notifications/tasks/status). The hook
// then takes the REST resume.
func TestAskWithdrawnAcrossProcesses(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T) *fixture
	}{
		{"sqlite", func(t *testing.T) *fixture { return newFixture(t, askDef) }},
		{"redis", func(t *testing.T) *fixture { return newRedisFixture(t, askDef) }},
		{"postgres", func(t *testing.T) *fixture { return newPostgresFixture(t, askDef) }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			f := b.open(t)
			g := f.twin()
			p, err := f.auth.Authenticate(t.Context(), f.token)
			require.NoError(t, err)
			c := f.stdioAs(t, p)
			c.initialize(t, nil)
			c.send(t, map[string]any{"id": 2, "method": "tools/call", "params": map[string]any{
				"name": "ask", "arguments": map[string]any{"orderId": "split"}, "task": map[string]any{}}})
			task := c.next(t, byID(2))["result"].(map[string]any)["task"].(map[string]any)
			taskID := task["taskId"].(string)
			statusIs := func(status string) func(map[string]any) bool {
				return func(m map[string]any) bool {
					if m["method"] != "notifications/tasks/status" {
						return false
					}
					p := m["params"].(map[string]any)
					return p["taskId"] == taskID && p["status"] == status
				}
			}
			if task["status"] != "input_required" {
				c.next(t, statusIs("input_required"))
			}

			// The answers alternate between the processes; the last is taken by g, the
			// process the session is not on.
			wrong := map[string]any{"approved": true, "note": "far too long"}
			for i := 1; i <= mcpserver.MaxAskAttempts; i++ {
				proc := []*fixture{g, f}[i%2]
				status, _, rpcErr := proc.rpcAnswer(t, extTask(10+i, "tasks/update", taskID, map[string]any{
					"inputResponses": map[string]any{"approve": map[string]any{"action": "accept", "content": wrong}}}))
				require.Equal(t, http.StatusBadRequest, status)
				want, shown := "Answer again", "input_required"
				if i == mcpserver.MaxAskAttempts {
					want, shown = "withdrawn", "working"
				}
				require.Contains(t, rpcErr["message"], want, "wrong answer %d", i)
				for name, q := range map[string]*fixture{"f": f, "g": g} {
					got := q.rpcResult(t, extTask(20+i, "tasks/get", taskID, nil))
					require.Equal(t, shown, got["status"], "tasks/get on %s after wrong answer %d", name, i)
				}
			}
			require.Equal(t, mcpserver.MaxAskAttempts, f.engineRun(t, taskID).AskMisses.N, "every process's answers counted once")
			withdrawn := c.next(t, statusIs("working"))
			require.Equal(t, "step 1/2 approve (hook): waiting on hook ask:split"+mcpserver.ResumeHint, withdrawn["params"].(map[string]any)["statusMessage"])
			c.send(t, map[string]any{"id": 3, "method": "tasks/get", "params": map[string]any{"taskId": taskID}})
			require.Equal(t, "working", c.next(t, byID(3))["result"].(map[string]any)["status"])

			rest, body := g.rest("POST", "/api/hooks/ask:split/resume", map[string]any{"approved": true, "note": "rest"}, http.Header{})
			require.Less(t, rest.StatusCode, 300, "%v", body)
			done := c.next(t, statusIs("completed"))
			require.Equal(t, taskID, done["params"].(map[string]any)["taskId"])
			ended := f.engineRun(t, taskID)
			require.EqualValues(t, "completed", ended.Status)
			require.JSONEq(t, `{"approved":true,"note":"rest"}`, string(ended.Output))
		})
	}
}
