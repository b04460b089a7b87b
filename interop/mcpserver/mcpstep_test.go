package mcpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
)

// TestMCPStepCallsAnotherGoRunner: a workflow's mcp step calls a tool of a second GoRunner
// (its /mcp, with a connection holding that GoRunner's token): the arguments come from
// expressions, the result is the remote run's envelope, and the stepId arrives as the
// remote call's idempotencyKey, so that the same key replays the remote run instead of
// starting another. A remote run that fails answers isError, which fails the step.
func TestMCPStepCallsAnotherGoRunner(t *testing.T) {
	ctx := context.Background()
	remote := newFixture(t, greetDef, boomDef)
	caller := newFixtureWith(t, nil, &fixture{secretKey: bytes.Repeat([]byte{7}, 32)})
	_, err := caller.catalog.CreateConnection(ctx, catalog.ConnectionParams{
		Name: "remote", Type: "bearer", Secret: remote.token, Hosts: []string{"127.0.0.1"}})
	require.NoError(t, err)
	publish(t, caller.catalog, fmt.Sprintf(`{"name":"relay","input":{"type":"object","properties":{"who":{"type":"string"}}},
		"steps":[{"id":"ask","mcp":{"url":%q,"tool":"greet","connection":"remote","arguments":{"name":"${{ input.who }}"}}}],
		"result":"${{ steps.ask.output.structuredContent }}"}`, remote.srv.URL+"/mcp"))

	s, _ := caller.connect("")
	res, got := call(t, s, "relay", map[string]any{"who": "Ada"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", got["status"], text(res))
	envelope := got["output"].(map[string]any)
	require.Equal(t, "completed", envelope["status"])
	require.Equal(t, "hello Ada", envelope["output"])
	require.Equal(t, false, envelope["replayed"])

	run, err := caller.engine.Get(ctx, got["runId"].(string))
	require.NoError(t, err)
	rs, _ := remote.connect("")
	_, again := call(t, rs, "greet", map[string]any{"name": "Ada", "idempotencyKey": run.Steps[0].StepID})
	require.Equal(t, true, again["replayed"], "the step's call was keyed by its stepId")
	require.Equal(t, envelope["runId"], again["runId"])

	publish(t, caller.catalog, fmt.Sprintf(`{"name":"relay-boom","input":{"type":"object"},
		"steps":[{"id":"ask","mcp":{"url":%q,"tool":"boom","connection":"remote"}}]}`, remote.srv.URL+"/mcp"))
	res, got = call(t, s, "relay-boom", map[string]any{})
	require.True(t, res.IsError, "a remote tool answering isError fails the step")
	require.Equal(t, "failed", got["status"])
	failure := got["error"].(map[string]any)
	require.Equal(t, "MCP_TOOL_ERROR", failure["code"])
	require.Contains(t, failure["message"], "kaboom", "with the tool's text")
}
