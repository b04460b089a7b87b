package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// mistake is one wrong call a scripted agent makes; before, when set, is a call made first
// whose structuredContent's runId the mistake may use as {{runId}}.
type mistake struct {
	what   string
	before *mcp.CallToolParams
	call   mcp.CallToolParams
}

// mistakes are the common mistakes of an agent, each answered with a tool error that says
// what was wrong and what to send instead.
var mistakes = []mistake{
	{what: "missing field", call: mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}}},
	{what: "wrong type", call: mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": 5}}},
	{what: "extra field under additionalProperties: false", call: mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada", "nmae": "Ada"}}},
	{what: "misspelled tool", call: mcp.CallToolParams{Name: "greeet", Arguments: map[string]any{"name": "Ada"}}},
	{what: "misspelled companion", call: mcp.CallToolParams{Name: "gorunner_getrun", Arguments: map[string]any{"runId": "x"}}},
	{what: "key reused with other arguments",
		before: &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada", "idempotencyKey": "order-1"}},
		call:   mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Bob", "idempotencyKey": "order-1"}}},
	{what: "empty idempotencyKey", call: mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada", "idempotencyKey": ""}}},
	{what: "idempotencyKey too long", call: mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada", "idempotencyKey": strings.Repeat("k", 256)}}},
	{what: "idempotencyKey not a string", call: mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada", "idempotencyKey": 42}}},
	{what: "wrong enum value", call: mcp.CallToolParams{Name: tools.ListRuns, Arguments: map[string]any{"status": "done"}}},
	{what: "limit out of range", call: mcp.CallToolParams{Name: tools.ListRuns, Arguments: map[string]any{"limit": 500}}},
	{what: "list_runs with a cursor it never gave out", call: mcp.CallToolParams{Name: tools.ListRuns, Arguments: map[string]any{"cursor": "garbage!"}}},
	{what: "runs of an unknown workflow", call: mcp.CallToolParams{Name: tools.ListRuns, Arguments: map[string]any{"workflow": "nope"}}},
	{what: "get_run without runId", call: mcp.CallToolParams{Name: tools.GetRun, Arguments: map[string]any{}}},
	{what: "get_run of an unknown id", call: mcp.CallToolParams{Name: tools.GetRun, Arguments: map[string]any{"runId": "0190a000-0000-7000-8000-000000000000"}}},
	{what: "bad waitSeconds", call: mcp.CallToolParams{Name: tools.GetRun, Arguments: map[string]any{"runId": "0190a000-0000-7000-8000-000000000000", "waitSeconds": 600}}},
	{what: "cancel of a finished run",
		before: &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}},
		call:   mcp.CallToolParams{Name: tools.CancelRun, Arguments: map[string]any{"runId": "{{runId}}"}}},
	{what: "resume of an unknown hook", call: mcp.CallToolParams{Name: tools.ResumeHook, Arguments: map[string]any{"token": "order:404", "payload": map[string]any{"ok": true}}}},
	{what: "find with an empty query", call: mcp.CallToolParams{Name: tools.FindWorkflows, Arguments: map[string]any{"query": ""}}},
	{what: "find with a query of no words", call: mcp.CallToolParams{Name: tools.FindWorkflows, Arguments: map[string]any{"query": "??"}}},
	{what: "run_workflow of an unknown workflow", call: mcp.CallToolParams{Name: tools.RunWorkflow, Arguments: map[string]any{"workflow": "gret", "arguments": map[string]any{"name": "Ada"}}}},
	{what: "run_workflow with the workflow's arguments at the top", call: mcp.CallToolParams{Name: tools.RunWorkflow, Arguments: map[string]any{"workflow": "greet", "name": "Ada"}}},
	{what: "run_workflow with arguments that are not an object", call: mcp.CallToolParams{Name: tools.RunWorkflow, Arguments: map[string]any{"workflow": "greet", "arguments": "Ada"}}},
	{what: "run_workflow with invalid arguments", call: mcp.CallToolParams{Name: tools.RunWorkflow, Arguments: map[string]any{"workflow": "greet", "arguments": map[string]any{"name": ""}}}},
	{what: "run_workflow with the key inside arguments", call: mcp.CallToolParams{Name: tools.RunWorkflow, Arguments: map[string]any{"workflow": "greet", "arguments": map[string]any{"name": "Ada", "idempotencyKey": "k"}}}},
	{what: "run_workflow with the key inside invalid arguments", call: mcp.CallToolParams{Name: tools.RunWorkflow, Arguments: map[string]any{"workflow": "greet", "arguments": map[string]any{"name": "", "nmae": "Ada", "idempotencyKey": "k"}}}},
}

// unstable are the parts of an answer that differ between runs: run IDs.
var unstable = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestScriptedAgentMistakes makes every mistake over MCP and compares the answers with
// testdata/mistakes.golden (go test -run TestScriptedAgentMistakes -update ./mcpserver/).
func TestScriptedAgentMistakes(t *testing.T) {
	f := newFixture(t, greetDef, invoiceDef)
	s, _ := f.connect("?tools=search")
	require.GreaterOrEqual(t, len(mistakes), 20)
	var golden bytes.Buffer
	for i, m := range mistakes {
		// A copy: mistakes is shared by every run of the test (-count).
		args := maps.Clone(m.call.Arguments.(map[string]any))
		m.call.Arguments = args
		if m.before != nil {
			res, first := call(t, s, m.before.Name, m.before.Arguments.(map[string]any))
			require.False(t, res.IsError, "%s: %s", m.what, text(res))
			if args["runId"] == "{{runId}}" {
				args["runId"] = first["runId"]
			}
		}
		res, err := s.CallTool(context.Background(), &m.call)
		require.NoError(t, err, "%s: a tool error, not a protocol error", m.what)
		require.True(t, res.IsError, "%s: %s", m.what, text(res))
		var answer struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(text(res)), &answer), "%s: %s", m.what, text(res))
		sent, err := json.Marshal(m.call.Arguments)
		require.NoError(t, err)
		fmt.Fprintf(&golden, "## %d. %s\n%s %s\n-> %s: %s\n\n", i+1, m.what, m.call.Name,
			unstable.ReplaceAllString(string(sent), "<id>"), answer.Error.Code, unstable.ReplaceAllString(answer.Error.Message, "<id>"))
	}
	path := filepath.Join("testdata", "mistakes.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, golden.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), golden.String())
}

// TestListRunsHugeCursor: a cursor as large as a request may carry is a tool error
// VALIDATION_ERROR, not a protocol error, whose answer does not echo it back.
func TestListRunsHugeCursor(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("")
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tools.ListRuns,
		Arguments: map[string]any{"cursor": strings.Repeat("A", 512<<10)}})
	require.NoError(t, err, "a tool error, not a protocol error")
	require.True(t, res.IsError, text(res))
	require.Contains(t, text(res), "VALIDATION_ERROR")
	require.Less(t, len(text(res)), 1024, "the cursor is not echoed")
}
