package api_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// approveDef asks for an approval of input.requestId, then waits on a second hook while
// still holding the first token.
func approveDef() map[string]any {
	return map[string]any{
		"name":  "approve-req",
		"input": map[string]any{"type": "object", "properties": map[string]any{"requestId": map[string]any{"type": "string"}}},
		"steps": []any{
			map[string]any{"id": "approve", "hook": map[string]any{"token": "approve:${{ input.requestId }}", "ask": map[string]any{
				"message": "Approve request ${{ input.requestId }}?",
				"schema": map[string]any{"type": "object", "required": []any{"approved"},
					"properties": map[string]any{"approved": map[string]any{"type": "boolean"}}},
			}}},
			map[string]any{"id": "hold", "hook": map[string]any{"token": "hold:${{ input.requestId }}"}},
			map[string]any{"id": "done", "set": "${{ steps.approve.output }}"},
		},
	}
}

// TestResumeChecked: the question is in waitingOn.hook and GET /api/hooks/{token}; a
// payload that does not fit the ask's schema is refused naming the pointer and delivers
// nothing; one that fits is delivered and the answer shows the run after it took it; a
// payload for a token no step waits on now is answered queued, and kept on the run when
// it ends undelivered.
func TestResumeChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(approveDef())
	id := e.startAs(e.token, "approve-req", map[string]any{"requestId": "r-7"})
	run := e.do("GET", "/api/runs/"+id+"?wait=30s", nil).data()
	require.Equal(t, "waiting", run["status"])
	question := map[string]any{"token": "approve:r-7", "message": "Approve request r-7?",
		"schema": map[string]any{"type": "object", "required": []any{"approved"}, "properties": map[string]any{"approved": map[string]any{"type": "boolean"}}}}
	require.Equal(t, question, run["waitingOn"].(map[string]any)["hook"])
	hook := e.do("GET", "/api/hooks/approve:r-7", nil).data()
	require.Equal(t, "Approve request r-7?", hook["message"])
	require.Equal(t, question["schema"], hook["schema"])

	typo := e.do("POST", "/api/hooks/approve:r-7/resume", map[string]any{"approve": "yes"})
	require.Equal(t, http.StatusBadRequest, typo.Status, string(typo.Raw))
	require.Equal(t, "VALIDATION_ERROR", typo.errorCode())
	details := typo.Body["error"].(map[string]any)["details"].([]any)
	require.NotEmpty(t, details)
	require.Contains(t, details[0].(map[string]any)["message"], "approved")
	wrong := e.do("POST", "/api/hooks/approve:r-7/resume", map[string]any{"approved": "yes"})
	require.Equal(t, http.StatusBadRequest, wrong.Status, string(wrong.Raw))
	require.Equal(t, "/approved", wrong.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["path"])
	still := e.do("GET", "/api/runs/"+id, nil).data()
	require.Equal(t, "approve:r-7", still["waitingOn"].(map[string]any)["hook"].(map[string]any)["token"], "nothing was delivered")

	ok := e.do("POST", "/api/hooks/approve:r-7/resume", map[string]any{"approved": true})
	require.Equal(t, http.StatusAccepted, ok.Status, string(ok.Raw))
	require.Equal(t, "delivered", ok.data()["delivery"])
	require.NotContains(t, ok.data(), "message")
	after := ok.data()["run"].(map[string]any)
	require.Equal(t, "hold:r-7", after["waitingOn"].(map[string]any)["hook"].(map[string]any)["token"], "the run after it took the payload")

	again := e.do("POST", "/api/hooks/approve:r-7/resume", map[string]any{"approved": false})
	require.Equal(t, http.StatusAccepted, again.Status, string(again.Raw))
	require.Equal(t, "queued", again.data()["delivery"])
	require.Contains(t, again.data()["message"], "no hook step waits on token")

	end := e.do("POST", "/api/hooks/hold:r-7/resume", map[string]any{})
	require.Equal(t, "delivered", end.data()["delivery"])
	done := end.data()["run"].(map[string]any)
	require.Equal(t, "completed", done["status"])
	require.Equal(t, map[string]any{"approved": true}, done["output"])
	require.Equal(t, []any{map[string]any{"token": "approve:r-7", "payload": map[string]any{"approved": false}}}, done["undeliveredPayloads"])
	require.Equal(t, done["undeliveredPayloads"], e.do("GET", "/api/runs/"+id, nil).data()["undeliveredPayloads"])
}

// TestWaitHoldsForShortSleep: ?wait holds while the run sleeps for less than the wait
// (its result comes in one call), and answers early for a sleep that ends after the wait.
func TestWaitHoldsForShortSleep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, d := range map[string]string{"nap": "2s", "hibernate": "1h"} {
		e.publish(map[string]any{"name": name, "input": map[string]any{"type": "object"}, "steps": []any{
			map[string]any{"id": "rest", "sleep": map[string]any{"duration": d}},
			map[string]any{"id": "done", "set": "awake"},
		}})
	}
	run := e.do("GET", "/api/runs/"+e.startAs(e.token, "nap", map[string]any{})+"?wait=20s", nil).data()
	require.Equal(t, "completed", run["status"], "one call gets a 2-second sleep's result")
	require.Equal(t, "awake", run["output"])

	start := time.Now()
	run = e.do("GET", "/api/runs/"+e.startAs(e.token, "hibernate", map[string]any{})+"?wait=20s", nil).data()
	require.Equal(t, "waiting", run["status"])
	require.Contains(t, run["waitingOn"], "sleepUntil")
	require.Less(t, time.Since(start), 10*time.Second, "a sleep past the wait's end answers early")
}

// TestEveryDefinitionProblem: a definition with five problems, a bad duration among them,
// is answered with five details, each with its pointer.
func TestEveryDefinitionProblem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc, err := os.ReadFile("../schemas/testdata/five-problems.yaml")
	require.NoError(t, err)
	a := e.do("POST", "/api/workflows", doc, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusBadRequest, a.Status, string(a.Raw))
	paths := []any{}
	for _, d := range a.Body["error"].(map[string]any)["details"].([]any) {
		paths = append(paths, d.(map[string]any)["path"])
	}
	require.ElementsMatch(t, []any{"/name", "/tagz", "/steps/0/sleep/duration", "/steps/1/http/method", "/steps/2/id"}, paths)
}

// TestResumeDeclineFitsEveryAsk: the answer of a person who declined the question
// ({"declined": true, "action": "decline"|"cancel"}, what elicitation and every face's
// Decline send) is delivered to a hook with ask whatever its schema; anything else shaped
// like it is checked as any payload.
func TestResumeDeclineFitsEveryAsk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(approveDef())
	for i, tc := range []struct {
		payload map[string]any
		status  int
	}{
		{map[string]any{"declined": true, "action": "maybe"}, http.StatusBadRequest},
		{map[string]any{"declined": true, "action": "decline", "approved": "yes"}, http.StatusBadRequest},
		{map[string]any{"declined": true, "action": "decline"}, http.StatusAccepted},
		{map[string]any{"declined": true, "action": "cancel"}, http.StatusAccepted},
	} {
		id := e.startAs(e.token, "approve-req", map[string]any{"requestId": fmt.Sprint("d-", i)})
		require.Equal(t, "waiting", e.do("GET", "/api/runs/"+id+"?wait=30s", nil).data()["status"])
		got := e.do("POST", fmt.Sprintf("/api/hooks/approve:d-%d/resume", i), tc.payload)
		require.Equal(t, tc.status, got.Status, "%v: %s", tc.payload, got.Raw)
		if tc.status == http.StatusAccepted {
			require.Equal(t, "delivered", got.data()["delivery"])
		}
	}
}
