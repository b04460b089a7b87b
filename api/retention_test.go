package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeleteRun is DELETE /api/runs/{id}: an ended run goes (204, then 404 everywhere), an
// active one stays (409), a token without runs:write on its workflow is refused (403).
func TestDeleteRun(t *testing.T) {
	t.Parallel()
	f := newScopeFixture(t)
	run := "/api/runs/" + f.greetRun

	for _, scope := range []string{"runs:read", "runs:write:tag=billing", "workflows:write"} {
		a := f.doAs(f.tokens[scope], "DELETE", run, nil)
		require.Equal(t, http.StatusForbidden, a.Status, "%s: %s", scope, a.Raw)
	}
	a := f.do("DELETE", "/api/runs/"+f.waitRun, nil)
	require.Equal(t, http.StatusConflict, a.Status, string(a.Raw))
	require.Equal(t, "CONFLICT", a.errorCode())
	require.Equal(t, http.StatusOK, f.do("GET", "/api/runs/"+f.waitRun, nil).Status, "the active run stays")

	a = f.doAs(f.tokens["runs:write"], "DELETE", run, nil)
	require.Equal(t, http.StatusNoContent, a.Status, string(a.Raw))
	require.Empty(t, a.Raw)
	require.Equal(t, http.StatusNotFound, f.do("GET", run, nil).Status)
	require.Equal(t, http.StatusNotFound, f.do("DELETE", run, nil).Status, "again")
	require.Equal(t, http.StatusNotFound, f.do("DELETE", "/api/runs/0190d5a0-0000-7000-8000-000000000000", nil).Status)
	list := f.do("GET", "/api/runs?workflow=greet", nil)
	require.Empty(t, list.Body["data"], "the deleted run is in no list")
}
