package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// finished starts a run of workflow (query: "" or "?environment=test") with the admin
// token, waits for it to finish and returns its ID.
func (e *env) finished(workflow, query string) string {
	e.t.Helper()
	a := e.do("POST", "/api/workflows/"+workflow+"/run"+query, map[string]any{"name": "Ada"})
	require.Equal(e.t, http.StatusAccepted, a.Status, string(a.Raw))
	id := a.data()["id"].(string)
	a = e.do("GET", "/api/runs/"+id+"?wait=10s", nil)
	require.Equal(e.t, "completed", a.data()["status"], string(a.Raw))
	return id
}

// TestRerunNeedsWhatStartingNeeds performs two scope bypasses through reruns. A rerun
// starts the run's workflow anew, at its current version, in the run's environment, so it
// needs what starting there needs: (1) a token with runs:write but not workflows:write,
// which may not run drafts, reruns a test run and so runs the current draft; (2) a token
// narrowed to tag billing reruns a run of a version tagged billing after the workflow's
// current version dropped the tag, so it starts a workflow it may not start. Both, one by
// one and in bulk, are 403 FORBIDDEN naming the missing scope, and start nothing.
func TestRerunNeedsWhatStartingNeeds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(greetDef("greet"))
	testRun := e.finished("greet", "?environment=test")

	charge := greetDef("charge")
	charge["tags"] = []any{"billing"}
	e.publish(charge)
	billingRun := e.finished("charge", "")
	charge["tags"] = []any{"payroll"}
	require.Equal(t, http.StatusOK, e.do("PUT", "/api/workflows/charge", charge).Status)
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/charge/publish", nil).Status)

	runsWrite := e.mint("runs-write", "runs:write")
	billing := e.mint("billing", "runs:write:tag=billing")
	drafts := e.mint("drafts", "runs:write", "workflows:write")
	runs := func() int { return len(e.do("GET", "/api/runs?limit=100", nil).Body["data"].([]any)) }
	before := runs()

	refused := []struct {
		name, token, path string
		body              any
		missing           string
	}{
		{"test run by ID", runsWrite, "/api/runs/" + testRun + "/rerun", nil, "workflows:write"},
		{"test run in bulk by ID", runsWrite, "/api/runs/rerun", map[string]any{"runIds": []string{testRun}}, "workflows:write"},
		{"test run in bulk by status", runsWrite, "/api/runs/rerun", map[string]any{"workflow": "greet", "status": "completed"}, "workflows:write"},
		{"tag dropped by ID", billing, "/api/runs/" + billingRun + "/rerun", nil, "runs:write:workflow=charge"},
		{"tag dropped in bulk by ID", billing, "/api/runs/rerun", map[string]any{"runIds": []string{billingRun}}, "runs:write:workflow=charge"},
	}
	for _, tc := range refused {
		a := e.doAs(tc.token, "POST", tc.path, tc.body)
		require.Equal(t, http.StatusForbidden, a.Status, "%s: %s", tc.name, a.Raw)
		require.Equal(t, "FORBIDDEN", a.errorCode(), tc.name)
		require.Contains(t, string(a.Raw), "lacks the scope "+tc.missing, tc.name)
	}
	require.Equal(t, before, runs(), "nothing was started")

	// What starting allows, rerunning allows.
	a := e.doAs(drafts, "POST", "/api/runs/"+testRun+"/rerun", nil)
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	require.Equal(t, "test", a.data()["environment"])
	a = e.doAs(runsWrite, "POST", "/api/runs/"+billingRun+"/rerun", nil)
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	a = e.doAs(runsWrite, "POST", "/api/runs/rerun", map[string]any{"workflow": "charge", "status": "completed"})
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
}
