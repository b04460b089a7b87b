package mcpserver

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// toolFilter shows a session only the workflow tools its principal's scopes let it call
// (SPEC §5, §9): runs:write on the workflow, plus workflows:write for the drafts of the
// test environment. mcp-go applies it to tools/list and to tools/call, where a filtered
// tool is "not found" exactly like a missing one. The companion tools stay listed; they
// check each run and hook they touch.
func (s *Server) toolFilter(env *environment) func(ctx context.Context, list []mcp.Tool) []mcp.Tool {
	return func(ctx context.Context, list []mcp.Tool) []mcp.Tool {
		p, ok := auth.PrincipalFrom(ctx)
		if !ok {
			return nil
		}
		if env.name == runner.EnvTest && !p.Scopes.AllowsAll(auth.WorkflowsWrite) {
			return companionsOnly(list)
		}
		if p.Scopes.AllowsAll(auth.RunsWrite) {
			return list
		}
		targets := *env.targets.Load()
		out := make([]mcp.Tool, 0, len(list))
		for _, t := range list {
			target, isWorkflow := targets[t.Name]
			if !isWorkflow && strings.HasPrefix(t.Name, schemas.ReservedPrefix) || isWorkflow && p.Scopes.Allows(auth.RunsWrite, target) {
				out = append(out, t)
			}
		}
		return out
	}
}

// companionsOnly keeps GoRunner's own tools.
func companionsOnly(list []mcp.Tool) []mcp.Tool {
	out := make([]mcp.Tool, 0, len(list))
	for _, t := range list {
		if strings.HasPrefix(t.Name, schemas.ReservedPrefix) {
			out = append(out, t)
		}
	}
	return out
}
