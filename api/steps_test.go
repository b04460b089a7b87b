package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestRunPastMaxListedRecords: a run with more records than runner.MaxListedRecords lists
// its top-level ones with counts, and GET /api/runs/{id}/steps?parent= pages the rest.
func TestRunPastMaxListedRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	items := make([]any, runner.MaxListedRecords) // one record each, and the foreach's own: one past
	for i := range items {
		items[i] = i
	}
	def := map[string]any{
		"name": "many", "input": map[string]any{"type": "object"},
		"steps": []any{
			map[string]any{"id": "each", "foreach": map[string]any{"items": items, "steps": []any{map[string]any{"id": "x", "set": "${{ item }}"}}}},
		},
	}
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows", def).Status)
	a := e.do("POST", "/api/workflows/many/run?environment=test&wait=10s", map[string]any{})
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, a.Status, string(a.Raw))
	id := a.data()["id"].(string)
	got := e.do("GET", "/api/runs/"+id+"?wait=10s", nil).data()
	require.Equal(t, "completed", got["status"])
	steps := got["steps"].([]any)
	require.Len(t, steps, 1, "only the top-level record")
	require.Equal(t, map[string]any{"total": float64(len(items)), "completed": float64(len(items)), "failed": 0.0, "running": 0.0, "waiting": 0.0},
		steps[0].(map[string]any)["counts"])

	var paths []string
	cursor := ""
	for {
		page := e.do("GET", "/api/runs/"+id+"/steps?parent=each&limit=64&cursor="+cursor, nil)
		require.Equal(t, http.StatusOK, page.Status, string(page.Raw))
		for _, s := range page.Body["data"].([]any) {
			paths = append(paths, s.(map[string]any)["path"].(string))
		}
		next, _ := page.Body["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Len(t, paths, len(items))
	for i, p := range paths {
		require.Equal(t, fmt.Sprintf("each/%d/x", i), p)
	}
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/api/runs/"+id+"/steps?parent=each&cursor=bad", nil).Status)
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/api/runs/"+id+"/steps", nil).Status)
}
