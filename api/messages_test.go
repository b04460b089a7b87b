package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMissingConnectionNamedOnce: a step whose connection does not exist fails with a
// message that names the connection once and says how to make it.
func TestMissingConnectionNamedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(map[string]any{"name": "status", "input": map[string]any{"type": "object"}, "steps": []any{
		map[string]any{"id": "get", "http": map[string]any{"method": "GET", "url": "https://status.example/api", "connection": "status-api"}},
	}})
	run := e.do("GET", "/api/runs/"+e.startAs(e.token, "status", map[string]any{})+"?wait=30s", nil).data()
	require.Equal(t, "failed", run["status"])
	msg := run["error"].(map[string]any)["message"].(string)
	require.Equal(t, 1, strings.Count(msg, `connection "status-api"`), msg)
	require.Contains(t, msg, "POST /api/connections")
}
