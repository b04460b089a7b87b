package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// victimFixture is an admin's run of workflow victim waiting on hook order:1, with a
// secret in its input.
type victimFixture struct {
	*env
	victim string
}

func newVictimFixture(t *testing.T) *victimFixture {
	e := newEnv(t)
	e.publish(map[string]any{
		"name": "victim", "input": map[string]any{"type": "object"},
		"steps":  []any{map[string]any{"id": "wait", "hook": map[string]any{"token": "order:${{ input.id }}"}}},
		"result": map[string]any{"got": "${{ steps.wait.output }}"},
	})
	f := &victimFixture{env: e, victim: e.startAs(e.token, "victim", map[string]any{"id": "1", "secret": "s3cret"})}
	require.Eventually(t, func() bool { return e.do("GET", "/api/hooks/order:1", nil).Status == http.StatusOK },
		10*time.Second, 10*time.Millisecond)
	return f
}

// requireUntouched checks that the victim still waits for its first payload.
func (f *victimFixture) requireUntouched() {
	f.t.Helper()
	a := f.do("POST", "/api/hooks/order:1/resume", `"untouched"`)
	require.Equal(f.t, http.StatusAccepted, a.Status, string(a.Raw))
	a = f.do("GET", "/api/runs/"+f.victim+"?wait=10s", nil)
	require.Equal(f.t, "completed", a.data()["status"], string(a.Raw))
	require.Equal(f.t, map[string]any{"got": "untouched"}, a.data()["output"])
}

// Attack 1 of issue 27: a token with runs:write and runs:read on workflow a alone starts a
// whose start token is held by the victim's run, under adopt. The start is refused 409
// CONFLICT naming no run, as GET of that run is refused; the admin, who may read the
// victim, is answered 200 with it, reused.
func TestStartTokenReachesOnlyReadableRuns(t *testing.T) {
	f := newVictimFixture(t)
	f.publish(map[string]any{
		"name": "a", "input": map[string]any{"type": "object"},
		"start": map[string]any{"token": "order:${{ input.id }}", "onConflict": "adopt"},
		"steps": []any{map[string]any{"id": "wait", "hook": map[string]any{"token": "order:${{ input.id }}"}}},
	})
	narrow := f.mint("narrow", "runs:write:workflow=a", "runs:read:workflow=a")
	require.Equal(t, http.StatusForbidden, f.doAs(narrow, "GET", "/api/runs/"+f.victim, nil).Status)

	a := f.doAs(narrow, "POST", "/api/workflows/a/run", map[string]any{"id": "1"})
	require.Equal(t, http.StatusConflict, a.Status, string(a.Raw))
	require.Equal(t, "CONFLICT", a.errorCode())
	require.NotContains(t, string(a.Raw), f.victim, "the victim's run ID crossed")
	require.NotContains(t, string(a.Raw), "s3cret", "the victim's input crossed")
	require.Empty(t, f.doAs(narrow, "GET", "/api/runs?workflow=a", nil).Body["data"], "nothing was admitted")

	a = f.do("POST", "/api/workflows/a/run", map[string]any{"id": "1"})
	require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
	require.Equal(t, true, a.Body["reused"], "SPEC §6: the owner run, reused")
	require.Equal(t, f.victim, a.data()["id"])

	f.requireUntouched()
}

// Attack 3 of issue 27: a token with workflows:write alone publishes a workflow whose run
// step acts on the victim's run, rotates its webhook and posts to it. The webhook's run acts
// for that publisher, which may reach no run: each action fails NOT_FOUND, as on a run (or
// token) that does not exist, and the victim is left as it was.
func TestWebhookRunActsWithinItsPublishersScopes(t *testing.T) {
	f := newVictimFixture(t)
	writer := f.mint("writer", "workflows:write")
	steps := map[string]map[string]any{
		"status": {"action": "status", "runId": "${{ input.runId }}"},
		"result": {"action": "result", "runId": "${{ input.runId }}"},
		"cancel": {"action": "cancel", "runId": "${{ input.runId }}"},
		"resume": {"action": "resume", "token": "order:1", "payload": map[string]any{"forged": true}},
	}
	for action, step := range steps {
		name := "reach-" + action
		a := f.doAs(writer, "POST", "/api/workflows", map[string]any{
			"name": name, "input": map[string]any{"type": "object"},
			"steps": []any{map[string]any{"id": "act", "run": step}},
		})
		require.Equal(t, http.StatusCreated, a.Status, string(a.Raw))
		require.Equal(t, http.StatusCreated, f.doAs(writer, "POST", "/api/workflows/"+name+"/publish", nil).Status)
		a = f.doAs(writer, "POST", "/api/workflows/"+name+"/webhook/rotate", nil)
		require.Equal(t, http.StatusCreated, a.Status, string(a.Raw))
		hook := a.data()["token"].(string)

		a = f.doAs("", "POST", "/webhooks/"+hook, map[string]any{"runId": f.victim})
		require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
		require.Equal(t, "failed", a.data()["status"], action)
		require.NotContains(t, string(a.Raw), "s3cret", "the victim's input crossed")
		failure := a.data()["error"].(map[string]any)
		require.Equal(t, "NOT_FOUND", failure["code"], action)
		if action == "resume" {
			require.Equal(t, `no active hook on token "order:1"`, failure["message"])
		} else {
			require.Equal(t, `run "`+f.victim+`" not found`, failure["message"], "as for a run that does not exist")
		}
		require.Equal(t, "waiting", f.do("GET", "/api/runs/"+f.victim, nil).data()["status"], action)
	}
	f.requireUntouched()
}

// A webhook call whose start token a run of the same workflow holds, under adopt, answers
// with that run as it stands once settled, marked reused (SPEC §6), as the run route does.
func TestWebhookAnswerMarksTheReusedRun(t *testing.T) {
	e := newEnv(t)
	e.publish(map[string]any{
		"name": "slow", "input": map[string]any{"type": "object"},
		"start": map[string]any{"token": "slow:${{ input.id }}", "onConflict": "adopt"},
		// past the webhook's wait: a sleep that ends within it is waited for (issue #28)
		"steps": []any{map[string]any{"id": "nap", "sleep": map[string]any{"duration": "1h"}}},
	})
	a := e.do("POST", "/api/workflows/slow/webhook/rotate", nil)
	require.Equal(t, http.StatusCreated, a.Status, string(a.Raw))
	hook := a.data()["token"].(string)
	owner := e.startAs(e.token, "slow", map[string]any{"id": "1"})

	a = e.doAs("", "POST", "/webhooks/"+hook, map[string]any{"id": "1"})
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	require.Equal(t, true, a.Body["reused"])
	require.Equal(t, owner, a.data()["id"])
	require.Equal(t, "waiting", a.data()["status"], "asleep: settled, not ended")
}
