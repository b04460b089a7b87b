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
		call, invalid := s.workflowArguments(ctx, env, a.Arguments, wf)
		if invalid != nil {
			return invalid, nil
		}
		call.Key, call.HasKey = outer.Key, outer.HasKey
		return s.runTool(ctx, req, env, wf, call, argumentsPath)
	}
}

// argumentsPath is where gorunner_run_workflow's arguments carry the workflow's own.
const argumentsPath = "/arguments"

// workflowArguments splits gorunner_run_workflow's arguments for the workflow (the engine
// checks them against its input schema): a key belongs beside the arguments, not inside,
// and is refused with the problems of the arguments themselves, so that the agent fixes
// all at once.
func (s *Server) workflowArguments(ctx context.Context, env string, raw json.RawMessage, wf *tools.Tool) (*tools.Call, *mcp.CallToolResult) {
	call, problems := tools.ParseCall(raw)
	if problems != nil {
		return nil, argumentProblems(wf, argumentsPath, problems)
	}
	if call.HasKey {
		inside := []schemas.Problem{{Path: argumentsPath + "/" + tools.KeyArgument,
			Message: "idempotencyKey goes beside arguments, not inside them: send {workflow, arguments, idempotencyKey}"}}
		place := func(p []schemas.Problem) []schemas.Problem { return placed(wf, argumentsPath, p) }
		return nil, tools.InvalidArguments(nil, s.withInputProblems(ctx, env, wf, call, inside, place))
	}
	return call, nil
}
