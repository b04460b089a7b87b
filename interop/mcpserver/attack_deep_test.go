package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/tools"
)

// nested is an array nested depth levels deep.
func nested(depth int) any {
	v := []any{}
	for range depth - 1 {
		v = []any{v}
	}
	return v
}

// TestAttackDeeplyNestedValue: a caller starts a run with an argument nested 9,900 levels
// deep (JSON-RPC and REST bodies may nest up to 10,000), which a step puts inside 120 arrays
// of its own. Before expression.MaxValueDepth the value passed every expression limit but
// could not be saved, encoding/json refusing anything past 10,000 levels: the start failed
// with 500 INTERNAL ("creating run: … exceeded max depth"), and on a worker the run could
// not be saved, again and again. Now the step fails EXPRESSION_LIMIT, naming the limit; nesting within the limit,
// also built by an expression and walked by toJSON, still completes over MCP.
func TestAttackDeeplyNestedValue(t *testing.T) {
	t.Parallel()
	nestDef := `{"name":"nest","input":{"type":"object","properties":{"v":{},"n":{"type":"integer"}}},
		"steps":[{"id":"wrap","set":` + strings.Repeat("[", 120) + `"${{ input.v }}"` + strings.Repeat("]", 120) + `},
		{"id":"build","set":"${{ reduce(1..(input.n ?? 1), [#acc], []) }}"},
		{"id":"size","set":"${{ len(toJSON(steps.build.output)) }}"}]}`
	f := newFixture(t, nestDef)
	s, _ := f.connect("")

	resp, body := f.rest(http.MethodPost, "/api/workflows/nest/run", map[string]any{"v": nested(9900)}, http.Header{})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
	runID := body["data"].(map[string]any)["id"].(string)
	res, out := call(t, s, tools.GetRun, map[string]any{"runId": runID, "waitSeconds": 30})
	require.Equal(t, string(runner.StatusFailed), out["status"], text(res))
	errObj := out["error"].(map[string]any)
	require.Equal(t, runner.CodeExpressionLimit, errObj["code"])
	require.Contains(t, errObj["message"], "nested more than")
	require.Equal(t, "wrap", errObj["step"])

	res, out = call(t, s, "nest", map[string]any{"v": nested(expression.MaxValueDepth - 120), "n": expression.MaxValueDepth - 1})
	require.False(t, res.IsError, text(res))
	require.Equal(t, string(runner.StatusCompleted), out["status"])
	require.Greater(t, out["output"], float64(2*expression.MaxValueDepth), "toJSON walked it all")
}
