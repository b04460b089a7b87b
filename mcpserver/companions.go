package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// companionFunc answers one companion tool call, whose arguments are valid, for p.
type companionFunc func(ctx context.Context, p auth.Principal, env string, args json.RawMessage) (*mcp.CallToolResult, error)

// companionTools are GoRunner's own tools for env, each checking its arguments against
// its input schema first, as workflow tools do.
func (s *Server) companionTools(env *environment) []server.ServerTool {
	funcs := map[string]companionFunc{
		tools.GetRun:     s.getRun,
		tools.ListRuns:   s.listRuns,
		tools.CancelRun:  s.cancelRun,
		tools.ResumeHook: s.resumeHook,
	}
	defs := tools.Companions()
	out := make([]server.ServerTool, len(defs))
	for i, t := range defs {
		out[i] = server.ServerTool{Tool: t, Handler: s.companionHandler(env.name, s.companionSchemas[t.Name], funcs[t.Name])}
	}
	return out
}

// compileCompanions compiles the companions' input schemas once.
func compileCompanions() (map[string]*schemas.InputSchema, error) {
	out := map[string]*schemas.InputSchema{}
	for _, t := range tools.Companions() {
		c, err := schemas.CompileInput(t.RawInputSchema)
		if err != nil {
			return nil, fmt.Errorf("compiling the input schema of %s: %w", t.Name, err)
		}
		out[t.Name] = c
	}
	return out, nil
}

func (s *Server) companionHandler(env string, input *schemas.InputSchema, fn companionFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, ok := auth.PrincipalFrom(ctx)
		if !ok {
			return nil, errUnauthenticated
		}
		call, problems := tools.ParseCall(rawArguments(req))
		if problems == nil {
			problems = input.Validate(call.Arguments)
		}
		if len(problems) > 0 {
			return tools.InvalidArguments(problems), nil
		}
		res, err := fn(ctx, p, env, call.Input)
		if err != nil {
			return s.errorResult(ctx, err)
		}
		return res, nil
	}
}

func (s *Server) getRun(ctx context.Context, p auth.Principal, _ string, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a tools.GetRunArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if _, err := s.guard.Run(ctx, p, auth.RunsRead, a.RunID); err != nil {
		return nil, err
	}
	wait := time.Duration(a.WaitSeconds * float64(time.Second))
	run, err := s.deps.Engine.Wait(ctx, a.RunID, min(wait, tools.MaxWaitSeconds*time.Second))
	if err != nil {
		return nil, err
	}
	return tools.Structured(tools.ResultOf(run)), nil
}

func (s *Server) listRuns(ctx context.Context, pr auth.Principal, _ string, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a tools.ListRunsArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	p := runner.ListRunsParams{Status: runner.Status(a.Status), Limit: cmpOr(a.Limit, tools.DefaultListLimit)}
	if a.Workflow != "" {
		w, err := s.deps.Catalog.Get(ctx, a.Workflow)
		if err != nil {
			return nil, err
		}
		p.WorkflowID = w.ID
	}
	readable, err := s.guard.ReadableRuns(ctx, pr)
	if err != nil {
		return nil, err
	}
	p.Readable = readable
	runs, _, err := s.deps.Engine.List(ctx, p)
	if err != nil {
		return nil, err
	}
	list := tools.RunList{Runs: make([]tools.Result, len(runs))}
	for i, r := range runs {
		list.Runs[i] = tools.ResultOf(r)
	}
	return tools.Structured(list), nil
}

func (s *Server) cancelRun(ctx context.Context, p auth.Principal, _ string, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a tools.CancelRunArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if _, err := s.guard.Run(ctx, p, auth.RunsWrite, a.RunID); err != nil {
		return nil, err
	}
	run, err := s.deps.Engine.Cancel(context.WithoutCancel(ctx), a.RunID)
	if err != nil {
		return nil, err
	}
	return tools.Structured(tools.ResultOf(run)), nil
}

// resumeHook sends the payload to the hook token in the session's environment and answers
// with the state of the run that owns it. It needs runs:write on that run's workflow.
func (s *Server) resumeHook(ctx context.Context, p auth.Principal, env string, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a tools.ResumeHookArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if err := s.guard.Hook(ctx, p, auth.RunsWrite, env, a.Token); err != nil {
		return nil, err
	}
	runID, err := s.deps.Engine.Resume(context.WithoutCancel(ctx), env, a.Token, a.Payload)
	if err != nil {
		return nil, err
	}
	run, err := s.deps.Engine.Get(ctx, runID)
	if err != nil {
		return nil, err
	}
	return tools.Structured(tools.ResultOf(run)), nil
}
