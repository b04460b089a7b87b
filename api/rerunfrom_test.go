package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRerunFromFailure: POST /api/runs/{id}/rerun?from=failure reruns a failed run from its
// failure (the step completed before it taken over); a run that did not fail and an unknown
// from are 400 at /from, and start nothing.
func TestRerunFromFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	def := greetDef("flaky")
	def["steps"] = []any{
		map[string]any{"id": "greet", "set": map[string]any{"message": "Hello, ${{ input.name }}!"}},
		map[string]any{"id": "boom", "if": "${{ input.name == 'Bob' }}", "fail": map[string]any{"message": "no Bob", "code": "NO_BOB"}},
	}
	e.publish(def)
	a := e.do("POST", "/api/workflows/flaky/run", map[string]any{"name": "Bob"})
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	failed := a.data()["id"].(string)
	require.Equal(t, "failed", e.do("GET", "/api/runs/"+failed+"?wait=10s", nil).data()["status"])
	done := e.finished("flaky", "")

	a = e.do("POST", "/api/runs/"+failed+"/rerun?from=failure", nil)
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	require.Equal(t, failed, a.data()["rerunOf"])
	rerun := e.do("GET", "/api/runs/"+a.data()["id"].(string)+"?wait=10s", nil).data()
	old := e.do("GET", "/api/runs/"+failed, nil).data()
	require.Equal(t, old["steps"].([]any)[0].(map[string]any)["startedAt"], rerun["steps"].([]any)[0].(map[string]any)["startedAt"],
		"the completed step is taken over, not run again")

	for _, path := range []string{"/api/runs/" + done + "/rerun?from=failure", "/api/runs/" + failed + "/rerun?from=start"} {
		a := e.do("POST", path, nil)
		require.Equal(t, http.StatusBadRequest, a.Status, path)
		require.Contains(t, string(a.Raw), `"/from"`, path)
	}
}
