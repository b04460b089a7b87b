package mcpserver_test

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/examples"
	"github.com/gorunner/gorunner/tools"
)

// maxGreetBytes is the budget for a one-property workflow's tool in tools/list (issue #17),
// `"execution":{"taskSupport":"optional"}` and the run card's 51 bytes of
// `"_meta":{"ui":{"resourceUri":"ui://gorunner/run"}}` (SPEC §5, Tasks and MCP Apps) and the
// envelope's `"waitingOn":{"type":"object"}` (issue #28) included.
const maxGreetBytes = 800

// maxAuthoringBytes is the budget for each authoring tool in tools/list (SPEC §5, listed
// with workflows:write): no bigger than the run companions (gorunner_list_runs is 1,067).
const maxAuthoringBytes = 900

// exampleDefs are the shipped example workflows.
func exampleDefs(t testing.TB) []string {
	t.Helper()
	fsys := examples.Workflows()
	names, err := fs.Glob(fsys, "*.yaml")
	require.NoError(t, err)
	defs := make([]string, len(names))
	for i, n := range names {
		raw, err := fs.ReadFile(fsys, n)
		require.NoError(t, err)
		defs[i] = string(raw)
	}
	return defs
}

// TestToolSizes prints the compact JSON bytes of every tool tools/list gives for the
// shipped examples, as they go over the wire, and holds greet to its budget. BENCHMARKS.md
// records the figures: go test -run TestToolSizes -v ./mcpserver/
func TestToolSizes(t *testing.T) {
	f := newFixtureConfig(t, nil, exampleDefs(t)...)
	res, err := f.post(t.Context(), statelessRequest(1, "tools/list", "", nil))
	require.NoError(t, err)
	defer res.Body.Close()
	var msg struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(readMessage(t, res), &msg))
	sizes := map[string]int{}
	total := 0
	for _, raw := range msg.Result.Tools {
		var tool struct {
			Name string `json:"name"`
		}
		require.NoError(t, json.Unmarshal(raw, &tool))
		sizes[tool.Name] = len(raw)
		total += len(raw)
		t.Logf("%-22s %5d bytes", tool.Name, len(raw))
	}
	t.Logf("%-22s %5d bytes (%d tools)", "tools/list in all", total, len(sizes))
	t.Logf("%-22s %5d bytes", "server instructions", len(tools.Instructions))
	for _, c := range tools.Companions() {
		if c.Name == tools.FindWorkflows || c.Name == tools.RunWorkflow {
			raw, err := json.Marshal(c)
			require.NoError(t, err)
			t.Logf("%-22s %5d bytes (listed in search mode)", c.Name, len(raw))
		}
	}
	require.Len(t, sizes, 8+4+len(authoringTools), "eight examples, four companions and the authoring tools")
	require.LessOrEqual(t, sizes["greet"], maxGreetBytes)
	for _, name := range authoringTools {
		require.LessOrEqual(t, sizes[name], maxAuthoringBytes, name)
	}
}
