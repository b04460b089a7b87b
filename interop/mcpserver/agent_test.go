package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/tools"
)

const (
	typedDef = `{"name":"typed","input":{"type":"object","properties":{"out":{}}},
		"output":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]},
		"steps":[{"id":"build","set":"${{ input.out }}"}]}`
	invoiceDef = `{"name":"send-invoice","title":"Send an invoice","description":"Emails an invoice to a customer.","tags":["billing"],
		"input":{"type":"object","properties":{"customer":{"type":"string"}},"required":["customer"],"additionalProperties":false},
		"steps":[{"id":"s","set":"sent to ${{ input.customer }}"}]}`
)

func TestTypedResults(t *testing.T) {
	f := newFixture(t, typedDef)
	s, _ := f.connect("")
	tool := listTools(t, s)["typed"]
	output := tool.OutputSchema.(map[string]any)["properties"].(map[string]any)["output"]
	require.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}, "required": []any{"message"}}, output,
		"the definition's output schema is the type of output")

	res, got := call(t, s, "typed", map[string]any{"out": map[string]any{"message": "hi"}})
	require.False(t, res.IsError, text(res))
	require.Equal(t, map[string]any{"message": "hi"}, got["output"])

	res, got = call(t, s, "typed", map[string]any{"out": map[string]any{"message": 7}})
	require.True(t, res.IsError)
	require.Equal(t, "failed", got["status"])
	require.NotContains(t, got, "output", "a failed run has no output")
	runErr := got["error"].(map[string]any)
	require.Equal(t, runner.CodeOutputInvalid, runErr["code"])
	require.Contains(t, runErr["message"], "/message: got number, want string")
}

// callText calls a tool and wants an isError answer; it returns the text.
func callError(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "a tool error, not a protocol error")
	require.True(t, res.IsError, text(res))
	return text(res)
}

func TestMissesNameTheClosestVisibleTools(t *testing.T) {
	f := newFixture(t, greetDef, invoiceDef)
	_, err := f.catalog.Create(context.Background(), []byte(`{"name":"greeter","input":{"type":"object"},"steps":[{"id":"s","set":1}]}`))
	require.NoError(t, err) // a draft: visible in the test environment only

	prod, _ := f.connect("")
	msg := callError(t, prod, "greete", nil)
	require.Contains(t, msg, `there is no tool named \"greete\"; did you mean \"greet\"?`)
	require.NotContains(t, msg, "greeter", "a draft is not a production tool")

	msg = callError(t, prod, "gorunner_run_workflo", nil)
	require.NotContains(t, msg, tools.RunWorkflow+`\"`, "not listed below the limit, so not suggested")
	msg = callError(t, prod, "gorunner_get_runs", nil)
	require.Contains(t, msg, `did you mean \"gorunner_get_run\"`)
	msg = callError(t, prod, tools.Miss, map[string]any{"name": "greet"})
	require.Contains(t, msg, `no tool named \"gorunner_unknown_tool\"`, "the miss tool is not callable by name")
	require.NotContains(t, msg, `\"`+tools.Miss+`\"?`)

	test, _ := f.connect("?environment=test")
	require.Eventually(t, func() bool {
		return callError(t, test, "greeterr", nil) != "" && len(listTools(t, test)) == 7+len(authoringTools)
	}, time.Second, 10*time.Millisecond)
	require.Contains(t, callError(t, test, "greeterr", nil), `did you mean \"greeter\"`)
	for name := range listTools(t, prod) {
		require.NotEqual(t, tools.Miss, name)
	}
}

func TestSearchTools(t *testing.T) {
	f := newFixture(t, greetDef, invoiceDef)
	s, _ := f.connect("?tools=search")
	require.ElementsMatch(t, append([]string{tools.GetRun, tools.ListRuns, tools.CancelRun, tools.ResumeHook, tools.FindWorkflows, tools.RunWorkflow}, authoringTools...),
		keysOf(listTools(t, s)), "the search tools instead of one tool per workflow")

	res, found := call(t, s, tools.FindWorkflows, map[string]any{"query": "invoice customer"})
	require.False(t, res.IsError, text(res))
	list := found["workflows"].([]any)
	require.Len(t, list, 1)
	first := list[0].(map[string]any)
	require.Equal(t, "send-invoice", first["name"])
	require.Equal(t, "Send an invoice", first["title"])
	require.Contains(t, first["inputSchema"].(map[string]any)["properties"], "customer")
	_, found = call(t, s, tools.FindWorkflows, map[string]any{"query": "invoice", "tag": "shipping"})
	require.Empty(t, found["workflows"])

	res, ran := call(t, s, tools.RunWorkflow, map[string]any{"workflow": "send-invoice", "arguments": map[string]any{"customer": "Ada"}})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", ran["status"])
	require.Equal(t, "sent to Ada", ran["output"])

	res, direct := call(t, s, "greet", map[string]any{"name": "Ada"})
	require.False(t, res.IsError, "a workflow found is callable by its own name: %s", text(res))
	require.Equal(t, "hello Ada", direct["output"])

	require.Contains(t, callError(t, s, tools.RunWorkflow, map[string]any{"workflow": "send-invoices"}), `did you mean \"send-invoice\"`)
}

func TestToolsQueryIsChecked(t *testing.T) {
	f := newFixture(t)
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp?tools=all", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+f.token)
	res, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
}

func TestRunWorkflowAndTheWorkflowToolReplayEachOther(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("?tools=search")
	for _, order := range [][2]string{{"greet", tools.RunWorkflow}, {tools.RunWorkflow, "greet"}} {
		key := "replay-" + order[0]
		byName := map[string]map[string]any{
			"greet":           {"name": "Ada", "idempotencyKey": key},
			tools.RunWorkflow: {"workflow": "greet", "arguments": map[string]any{"name": "Ada"}, "idempotencyKey": key},
		}
		_, first := call(t, s, order[0], byName[order[0]])
		_, second := call(t, s, order[1], byName[order[1]])
		require.Equal(t, first["runId"], second["runId"], "%s then %s", order[0], order[1])
		require.Equal(t, false, first["replayed"])
		require.Equal(t, true, second["replayed"])
	}
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Len(t, runs, 2, "one run per key")
}

func TestListLimitSwitchesToSearch(t *testing.T) {
	f := newFixtureConfig(t, &mcpserver.Config{ListLimit: 2}, greetDef, invoiceDef)
	s, ev := f.connect("")
	require.Contains(t, listTools(t, s), "greet", "two workflows: at the limit, one tool each")
	require.NotContains(t, listTools(t, s), tools.FindWorkflows)

	publish(t, f.catalog, approveDef)
	require.Eventually(t, func() bool { return ev.changes() > 0 }, 2*time.Second, 10*time.Millisecond)
	got := listTools(t, s)
	require.Contains(t, got, tools.FindWorkflows, "three workflows: one past the limit")
	require.NotContains(t, got, "greet")
}

func TestAThousandWorkflowsFindAndRunInTwoCalls(t *testing.T) {
	const n = 1000
	defs := make([]string, n)
	for i := range defs {
		defs[i] = fmt.Sprintf(`{"name":"wf-%04d","title":"Workflow number %04d","description":"Ticket %d of the catalog.",
			"input":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},"steps":[{"id":"s","set":"${{ input.n * %d }}"}]}`, i, i, i, i)
	}
	f := newFixtureConfig(t, nil, defs...)
	s, _ := f.connect("")
	listed := listTools(t, s)
	require.Len(t, listed, 6+len(authoringTools), "past the default limit of %d: the search tools", mcpserver.DefaultListLimit)

	_, found := call(t, s, tools.FindWorkflows, map[string]any{"query": "workflow 0421"})
	best := found["workflows"].([]any)[0].(map[string]any)
	require.Equal(t, "wf-0421", best["name"])
	_, ran := call(t, s, tools.RunWorkflow, map[string]any{"workflow": best["name"], "arguments": map[string]any{"n": 2}})
	require.Equal(t, "completed", ran["status"])
	require.Equal(t, json.Number("842"), json.Number(fmt.Sprint(ran["output"])))
}
