package main_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTwoProcessesShareOneSQLiteFile starts two real `gorunner serve` processes on one
// data directory, submits runs to both, and proves every run completes with each http
// step's Idempotency-Key seen exactly once: no step ran twice.
func TestTwoProcessesShareOneSQLiteFile(t *testing.T) {
	t.Parallel()
	counter := newKeyCounter()
	counter.arrived = make(chan string, 1000)
	target := httptest.NewServer(counter)
	defer target.Close()

	dir := t.TempDir()
	first := startServe(t, dir, "--http-allow", "127.0.0.1")
	token := first.adminToken(t)
	second := startServe(t, dir, "--http-allow", "127.0.0.1", "--store", "sqlite:"+filepath.Join(dir, "gorunner.db"))
	def := `{"name": "shared", "input": {"type": "object"}, "steps": [
	  {"id": "call", "http": {"method": "POST", "url": "` + target.URL + `", "body": "${{ input }}"}},
	  {"id": "done", "set": "${{ steps.call.output.status }}"}
	]}`
	status, body := call(t, token, "POST", first.url+"/api/workflows", def)
	require.Equal(t, 201, status, body)
	status, _ = call(t, token, "POST", second.url+"/api/workflows/shared/publish", "")
	require.Equal(t, 201, status, "the second process sees the first one's workflow")

	const runs = 40
	ids := make([]string, 0, runs)
	for i := range runs {
		s := []*server{first, second}[i%2]
		status, body := call(t, token, "POST", s.url+"/api/workflows/shared/run", fmt.Sprintf(`{"n": %d}`, i))
		require.Equal(t, 202, status, body)
		ids = append(ids, body["data"].(map[string]any)["id"].(string))
	}
	for i, id := range ids {
		s := []*server{second, first}[i%2]
		status, body := call(t, token, "GET", s.url+"/api/runs/"+id+"?wait=60s", "")
		require.Equal(t, 200, status)
		require.Equal(t, "completed", body["data"].(map[string]any)["status"], body)
	}
	counts := counter.snapshot()
	require.Len(t, counts, runs, "one Idempotency-Key per run's http step")
	for key, n := range counts {
		require.Equal(t, 1, n, "step %s ran once", key)
	}
}
