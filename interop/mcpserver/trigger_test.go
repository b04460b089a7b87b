package mcpserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestToolCallRunsAreMCP: a run a tool call starts carries the mcp trigger, and
// ?trigger=mcp lists it.
func TestToolCallRunsAreMCP(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("")
	res, _ := call(t, s, "greet", map[string]any{"name": "Ada"})
	require.False(t, res.IsError, text(res))
	runs, _, err := f.engine.List(context.Background(), runner.ListRunsParams{Trigger: runner.TriggerMCP, Limit: 10})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, runner.Trigger{Type: runner.TriggerMCP}, runs[0].Trigger)
}
