package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// runWorkflowHandler answers gorunner_run_workflow {workflow, arguments, idempotencyKey}
// (own is its definition): the arguments are checked against the workflow's own input
// schema and the run goes through runTool, the same admission and keyed replay
// (POST /api/workflows/{name}/run) as a call of the workflow's own tool, so a call by
// either replays the other.
func (s *Server) runWorkflowHandler(env string, own mcp.Tool) server.ToolHandlerFunc {
	input := s.companionSchemas[own.Name]
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := auth.PrincipalFrom(ctx); !ok {
			return nil, errUnauthenticated
		}
		outer, problems := validArguments(rawArguments(req), input)
		if problems != nil {
			return tools.InvalidArguments(own.RawInputSchema, problems), nil
		}
		var a tools.RunWorkflowArgs
		if err := json.Unmarshal(outer.Input, &a); err != nil {
			return nil, err
		}
		v, scope := s.envs[env].view.Load(), callScopeOf(ctx, env)
		wf, ok := v.byName[a.Workflow]
		if !ok || !scope.allows(wf) {
			return tools.Unknown("workflow", a.Workflow, tools.Closest(a.Workflow, scope.names(v)), true), nil
		}
		call, problems := workflowArguments(a.Arguments, wf)
		if problems != nil {
			return tools.InvalidArguments(nil, problems), nil
		}
		call.Key, call.HasKey = outer.Key, outer.HasKey
		return s.runTool(ctx, req, env, wf, call)
	}
}

// workflowArguments checks gorunner_run_workflow's arguments against the workflow's input
// schema. Problems are explained from that schema and placed under /arguments; a key
// belongs beside the arguments, not inside.
func workflowArguments(raw json.RawMessage, wf *tools.Tool) (*tools.Call, []schemas.Problem) {
	call, problems := validArguments(raw, wf.Input)
	if problems == nil && call.HasKey {
		return nil, []schemas.Problem{{Path: "/arguments/" + tools.KeyArgument,
			Message: "idempotencyKey goes beside arguments, not inside them: send {workflow, arguments, idempotencyKey}"}}
	}
	if len(problems) == 0 {
		return call, nil
	}
	problems = tools.Explain(wf.Tool.RawInputSchema, problems)
	for i := range problems {
		problems[i].Path = "/arguments" + problems[i].Path
	}
	return nil, problems
}
