package mcpserver_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/tools"
)

// scaleDefs are n small workflows named wf-00000 onwards.
func scaleDefs(n int) []string {
	defs := make([]string, n)
	for i := range defs {
		defs[i] = fmt.Sprintf(`{"name":"wf-%05d","input":{"type":"object","properties":{"n":{"type":"integer"}}},"steps":[{"id":"s","set":%d}]}`, i, i)
	}
	return defs
}

// listPages pages through tools/list and returns every tool name in the order listed and
// how many pages it took.
func listPages(ctx context.Context, s *mcp.ClientSession) ([]string, int, error) {
	var names []string
	params := &mcp.ListToolsParams{}
	for pages := 1; ; pages++ {
		res, err := s.ListTools(ctx, params)
		if err != nil {
			return nil, pages, err
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if res.NextCursor == "" {
			return names, pages, nil
		}
		params.Cursor = res.NextCursor
	}
}

func TestToolsListAtScale(t *testing.T) {
	start := time.Now()
	f := newFixtureConfig(t, &mcpserver.Config{PageSize: mcpserver.DefaultPageSize, ListLimit: scaleWorkflows}, scaleDefs(scaleWorkflows)...)
	t.Logf("published %d workflows and loaded their tools in %v", scaleWorkflows, time.Since(start))
	s, _ := f.connect("")

	names, pages, err := listPages(context.Background(), s)
	require.NoError(t, err)
	want := append([]string{tools.GetRun, tools.ListRuns, tools.CancelRun, tools.ResumeHook}, authoringTools...)
	for i := range scaleWorkflows {
		want = append(want, fmt.Sprintf("wf-%05d", i))
	}
	slices.Sort(want)
	slices.Sort(names)
	require.Equal(t, want, names, "every tool listed exactly once")
	require.Equal(t, (len(want)+mcpserver.DefaultPageSize-1)/mcpserver.DefaultPageSize, pages)
}
