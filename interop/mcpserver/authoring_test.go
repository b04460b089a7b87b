package mcpserver_test

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

var authoringTools = []string{"gorunner_validate_workflow", "gorunner_save_workflow", "gorunner_test_workflow",
	"gorunner_publish_workflow", "gorunner_get_workflow", "gorunner_workflow_schema"}

// quoteMistake is a three-step workflow, as an agent's YAML, whose last step reads a step
// that does not exist (steps.totl, for steps.total).
const quoteMistake = `name: quote
description: Prices an order.
input:
  type: object
  properties:
    qty: { type: integer, minimum: 1 }
    price: { type: number }
  required: [qty, price]
steps:
  - id: order
    set: { qty: "${{ input.qty }}", price: "${{ input.price }}" }
  - id: total
    set: "${{ steps.order.output.qty * steps.order.output.price }}"
  - id: answer
    set: { total: "${{ steps.totl.output }}" }
`

// quoteFixed is quoteMistake corrected, as a JSON object.
var quoteFixed = map[string]any{
	"name": "quote", "description": "Prices an order.",
	"input": map[string]any{"type": "object", "properties": map[string]any{
		"qty": map[string]any{"type": "integer", "minimum": 1}, "price": map[string]any{"type": "number"},
	}, "required": []string{"qty", "price"}},
	"steps": []any{
		map[string]any{"id": "order", "set": map[string]any{"qty": "${{ input.qty }}", "price": "${{ input.price }}"}},
		map[string]any{"id": "total", "set": "${{ steps.order.output.qty * steps.order.output.price }}"},
		map[string]any{"id": "answer", "set": map[string]any{"total": "${{ steps.total.output }}"}},
	},
}

// TestAgentAuthorsAWorkflow: an agent with workflows:write reads the schema, writes a
// three-step workflow with a mistake, reads the problems (nothing is saved), fixes it,
// test-runs the draft, publishes it and calls the new tool in the same session.
func TestAgentAuthorsAWorkflow(t *testing.T) {
	f := newFixture(t)
	s, _ := f.connect("")
	listed := listTools(t, s)
	for _, name := range authoringTools {
		require.Contains(t, listed, name)
		requireShape(t, listed[name])
	}

	res, guide := call(t, s, "gorunner_workflow_schema", map[string]any{})
	require.False(t, res.IsError, text(res))
	require.Contains(t, guide["guide"], "gorunner_save_workflow")
	require.Equal(t, "GoRunner workflow definition", guide["schema"].(map[string]any)["title"])

	res, checked := call(t, s, "gorunner_validate_workflow", map[string]any{"definition": quoteMistake})
	require.False(t, res.IsError, "validation answers the problems, it does not fail: %s", text(res))
	require.Equal(t, false, checked["valid"])
	requireProblemAt(t, checked, "/steps/2/set")

	res, saved := call(t, s, "gorunner_save_workflow", map[string]any{"definition": quoteMistake})
	require.True(t, res.IsError, "an invalid definition is not saved")
	require.Equal(t, "quote", saved["name"])
	requireProblemAt(t, saved, "/steps/2/set")
	res, _ = call(t, s, "gorunner_get_workflow", map[string]any{"name": "quote"})
	require.True(t, res.IsError, "nothing was saved")
	require.Contains(t, text(res), "NOT_FOUND")

	res, saved = call(t, s, "gorunner_save_workflow", map[string]any{"definition": quoteFixed})
	require.False(t, res.IsError, text(res))
	require.Equal(t, map[string]any{"name": "quote", "rev": float64(1), "problems": []any{}}, saved)

	res, _ = call(t, s, "gorunner_test_workflow", map[string]any{"name": "quote", "input": map[string]any{"qty": 0}})
	require.True(t, res.IsError, "an input the draft's schema refuses starts nothing")
	require.Contains(t, text(res), "/input/qty")
	require.Contains(t, text(res), "/input/price")

	keyed := map[string]any{"name": "quote", "input": map[string]any{"qty": 3, "price": 2.5}, "idempotencyKey": "try-1"}
	res, run := call(t, s, "gorunner_test_workflow", keyed)
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", run["status"])
	require.Equal(t, map[string]any{"total": 7.5}, run["output"])
	require.Equal(t, false, run["replayed"])
	_, again := call(t, s, "gorunner_test_workflow", keyed)
	require.Equal(t, true, again["replayed"])
	require.Equal(t, run["runId"], again["runId"])
	require.NotContains(t, listTools(t, s), "quote", "a draft has no production tool")

	res, version := call(t, s, "gorunner_publish_workflow", map[string]any{"name": "quote"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, float64(1), version["version"])
	require.Equal(t, true, version["created"])
	v, err := f.catalog.Version(context.Background(), workflowID(t, f, "quote"), 1)
	require.NoError(t, err)
	require.NotNil(t, v.PublishedBy)
	require.Equal(t, f.principal, v.PublishedBy.ID, "the calling principal is the publisher")

	res, out := call(t, s, "quote", map[string]any{"qty": 2, "price": 4})
	require.False(t, res.IsError, "the new tool is callable in the same session at once: %s", text(res))
	require.Equal(t, map[string]any{"total": float64(8)}, out["output"])

	_, got := call(t, s, "gorunner_get_workflow", map[string]any{"name": "quote"})
	require.Equal(t, float64(1), got["rev"])
	require.Equal(t, true, got["published"])
	require.Len(t, got["versions"], 1)
}

// workflowID is the ID of the workflow called name.
func workflowID(t *testing.T, f *fixture, name string) string {
	t.Helper()
	w, err := f.catalog.Get(context.Background(), name)
	require.NoError(t, err)
	return w.ID
}

func requireProblemAt(t *testing.T, answer map[string]any, path string) {
	t.Helper()
	var paths []string
	for _, p := range answer["problems"].([]any) {
		paths = append(paths, p.(map[string]any)["path"].(string))
	}
	require.Contains(t, paths, path)
}

// requireShape asserts that a tool has annotations, its pointer hints set (the golden
// exchanges show all four), and an output schema.
func requireShape(t *testing.T, tool *mcp.Tool) {
	t.Helper()
	a := tool.Annotations
	require.NotNil(t, a, tool.Name)
	require.NotNil(t, a.DestructiveHint, tool.Name)
	require.NotNil(t, a.OpenWorldHint, tool.Name)
	require.NotNil(t, tool.OutputSchema, tool.Name)
}

// authoringArgs are valid arguments of each authoring tool.
var authoringArgs = map[string]map[string]any{
	"gorunner_validate_workflow": {"definition": quoteFixed},
	"gorunner_save_workflow":     {"definition": quoteFixed},
	"gorunner_test_workflow":     {"name": "greet", "input": map[string]any{"name": "Ada"}},
	"gorunner_publish_workflow":  {"name": "greet"},
	"gorunner_get_workflow":      {"name": "greet"},
	"gorunner_workflow_schema":   {},
}

// TestAuthoringNeedsWorkflowsWrite: a token without workflows:write on every workflow
// lists none of the authoring tools, and calling one is answered as a tool that does not
// exist; nothing is saved.
func TestAuthoringNeedsWorkflowsWrite(t *testing.T) {
	f := newFixture(t, greetDef)
	for _, scopes := range [][]string{{"runs:write"}, {"runs:write", "runs:read"}, {"runs:write:tag=billing"}} {
		s, _ := f.connectAs(f.mint(scopes...), "")
		listed := listTools(t, s)
		for _, name := range authoringTools {
			require.NotContains(t, listed, name, scopes)
		}
		for _, name := range authoringTools {
			others := slices.DeleteFunc(slices.Clone(authoringTools), func(n string) bool { return n == name })
			requireNotFound(t, s, name, authoringArgs[name], others...)
		}
	}
	_, err := f.catalog.Get(context.Background(), "quote")
	require.Error(t, err, "nothing was saved")

	writer, _ := f.connectAs(f.mint("workflows:write"), "")
	require.Subset(t, keysOf(listTools(t, writer)), authoringTools)
	res, _ := call(t, writer, "gorunner_test_workflow", authoringArgs["gorunner_test_workflow"])
	require.True(t, res.IsError, "a test run also needs runs:write on the workflow")
	require.Contains(t, text(res), `there is no workflow named \"greet\"`)
}

// TestGoldenAuthoring records what an agent sees of the authoring tools' answers: the
// problems of a definition (validate, a refused save), a save, a test run of the draft,
// the publish, the new tool's call and the workflow read back. Any change shows in
// testdata/authoring.golden (go test -run TestGoldenAuthoring -update ./mcpserver/).
func TestGoldenAuthoring(t *testing.T) {
	f := newFixtureConfig(t, nil)
	tool := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "arguments": args}
	}
	recordExchanges(t, f, "authoring.golden", []exchange{
		{"validate: every problem with its pointer", "tools/call", "gorunner_validate_workflow",
			tool("gorunner_validate_workflow", map[string]any{"definition": quoteMistake})},
		{"save an invalid definition: isError, nothing saved", "tools/call", "gorunner_save_workflow",
			tool("gorunner_save_workflow", map[string]any{"definition": quoteMistake})},
		{"save the fixed definition: rev 1", "tools/call", "gorunner_save_workflow",
			tool("gorunner_save_workflow", map[string]any{"definition": quoteFixed})},
		{"save at a rev that is not the current one: a conflict", "tools/call", "gorunner_save_workflow",
			tool("gorunner_save_workflow", map[string]any{"definition": quoteFixed, "expectedRev": 7})},
		{"test-run the draft", "tools/call", "gorunner_test_workflow",
			tool("gorunner_test_workflow", map[string]any{"name": "quote", "input": map[string]any{"qty": 3, "price": 2.5}, "idempotencyKey": "golden-test"})},
		{"publish", "tools/call", "gorunner_publish_workflow", tool("gorunner_publish_workflow", map[string]any{"name": "quote"})},
		{"publish again, the draft unchanged: the same version", "tools/call", "gorunner_publish_workflow",
			tool("gorunner_publish_workflow", map[string]any{"name": "quote"})},
		{"the new tool", "tools/call", "quote", tool("quote", map[string]any{"qty": 2, "price": 4})},
		{"the workflow read back", "tools/call", "gorunner_get_workflow", tool("gorunner_get_workflow", map[string]any{"name": "quote"})},
	})
}

// TestValidateWorkflowForms: a definition is taken as a JSON object, or as a YAML or JSON
// document in a string; what cannot be decoded is a problem with its pointer too.
func TestValidateWorkflowForms(t *testing.T) {
	f := newFixture(t)
	s, _ := f.connect("")
	for _, tc := range []struct {
		name       string
		definition any
		valid      bool
		at         string
	}{
		{"a JSON object", quoteFixed, true, ""},
		{"a JSON document in a string", string(mustJSON(t, quoteFixed)), true, ""},
		{"a YAML document with a mistake", quoteMistake, false, "/steps/2/set"},
		{"an unknown field", map[string]any{"name": "x", "input": map[string]any{"type": "object"}, "stepz": []any{}}, false, "/stepz"},
		{"not a document", "- just\n- a list\n", false, ""},
		{"a bad name and no steps", map[string]any{"name": "Bad Name", "input": map[string]any{"type": "object"}}, false, "/name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, got := call(t, s, "gorunner_validate_workflow", map[string]any{"definition": tc.definition})
			require.False(t, res.IsError, text(res))
			require.Equal(t, tc.valid, got["valid"], text(res))
			if tc.valid {
				require.Empty(t, got["problems"])
				return
			}
			requireProblemAt(t, got, tc.at)
		})
	}
	res, _ := call(t, s, "gorunner_validate_workflow", map[string]any{"definition": 7})
	require.True(t, res.IsError, "a definition is an object or a string")
	require.Contains(t, text(res), "/definition")
	_, err := f.catalog.Get(context.Background(), "quote")
	require.Error(t, err, "validating saves nothing")
}
