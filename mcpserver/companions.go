package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// companionFunc answers one companion tool call whose arguments are valid.
type companionFunc func(ctx context.Context, env string, c *tools.Call) (*mcp.CallToolResult, error)

// companionTools are GoRunner's own tools for env, each checking its arguments against
// its input schema first, as workflow tools do.
func (s *Server) companionTools(env *environment) []server.ServerTool {
	funcs := map[string]companionFunc{
		tools.GetRun:        s.getRun,
		tools.ListRuns:      s.listRuns,
		tools.CancelRun:     s.cancelRun,
		tools.ResumeHook:    s.resumeHook,
		tools.FindWorkflows: s.find,
		tools.Miss:          s.miss,

		tools.ValidateWorkflow: s.validateWorkflow,
		tools.SaveWorkflow:     s.saveWorkflow,
		tools.PublishWorkflow:  s.publishWorkflow,
		tools.GetWorkflow:      s.getWorkflow,
		tools.WorkflowSchema:   s.workflowSchema,
	}
	defs := tools.Companions()
	out := make([]server.ServerTool, len(defs))
	for i, t := range defs {
		switch t.Name {
		case tools.RunWorkflow:
			out[i] = server.ServerTool{Tool: t, Handler: s.runWorkflowHandler(env.name, t)}
		case tools.TestWorkflow:
			out[i] = server.ServerTool{Tool: t, Handler: s.testWorkflowHandler(t)}
		default:
			out[i] = server.ServerTool{Tool: t, Handler: s.companionHandler(env.name, t, funcs[t.Name])}
		}
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

func (s *Server) companionHandler(env string, t mcp.Tool, fn companionFunc) server.ToolHandlerFunc {
	input := s.companionSchemas[t.Name]
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := auth.PrincipalFrom(ctx); !ok {
			return nil, errUnauthenticated
		}
		call, problems := validArguments(rawArguments(req), input)
		if problems != nil {
			return tools.InvalidArguments(t.RawInputSchema, problems), nil
		}
		res, err := fn(ctx, env, call)
		if err != nil {
			return s.errorResult(ctx, err)
		}
		return res, nil
	}
}

// validArguments splits a companion tool call's raw arguments (tools.ParseCall) and checks
// them against the tool's input schema: the call, or the problems. (A workflow's arguments
// are checked by the engine, see runTool.)
func validArguments(raw json.RawMessage, input *schemas.InputSchema) (*tools.Call, []schemas.Problem) {
	call, problems := tools.ParseCall(raw)
	if problems != nil {
		return nil, problems
	}
	// Cannot fail: ParseCall's json.Unmarshal accepted these same bytes, and a Decoder
	// with UseNumber accepts all that json.Unmarshal does.
	args, _ := decodeNumbers(call.Arguments)
	if problems := input.Validate(args); len(problems) > 0 {
		return nil, problems
	}
	return call, nil
}

func (s *Server) getRun(ctx context.Context, _ string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.GetRunArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	wait := min(time.Duration(a.WaitSeconds*float64(time.Second)), tools.MaxWaitSeconds*time.Second)
	if wait > 0 {
		p, _ := auth.PrincipalFrom(ctx) // companionHandler made sure there is one
		release, err := s.deps.Engine.ReserveWait(p.ID)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	run, err := s.readRun(ctx, a.RunID, wait)
	if err == nil {
		run, err = s.deps.Engine.Place(ctx, run) // a queued run says where it stands
	}
	if err != nil {
		return nil, err
	}
	return tools.Structured(tools.ResultOf(run)), nil
}

// readRun is run id once p may read it, after waiting up to wait for it to settle. A
// principal that reads every run waits at once; another has the run read to check its
// access (one it may not read is not found, see ownRun), and that read is the answer when
// the run has settled or nothing is waited for.
func (s *Server) readRun(ctx context.Context, id string, wait time.Duration) (*runner.Run, error) {
	p := principal(ctx)
	if p.Scopes.AllowsAll(auth.RunsRead) {
		return s.deps.Engine.Wait(ctx, id, wait)
	}
	run, err := s.ownRun(ctx, p, auth.RunsRead, id)
	if err != nil {
		return nil, err
	}
	if wait <= 0 {
		return run, nil
	}
	return s.deps.Engine.WaitFrom(ctx, run, wait)
}

func (s *Server) listRuns(ctx context.Context, _ string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.ListRunsArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	p := runner.ListRunsParams{Status: runner.Status(a.Status), Limit: cmp.Or(a.Limit, tools.DefaultListLimit), Cursor: a.Cursor}
	if a.Workflow != "" {
		id, err := s.access.ListedWorkflow(ctx, principal(ctx), a.Workflow)
		if err != nil {
			return nil, err
		}
		p.WorkflowID = id
	}
	readable, err := s.access.ReadableRuns(ctx, principal(ctx))
	if err != nil {
		return nil, err
	}
	p.Readable = readable
	// one page, which examines what a REST page does: the agent follows its cursor
	runs, next, err := s.deps.Engine.List(ctx, p)
	if err != nil {
		return nil, err
	}
	list := tools.RunList{Runs: make([]tools.Result, len(runs)), NextCursor: next}
	for i, r := range runs {
		list.Runs[i] = tools.ResultOf(r.Listed())
	}
	return tools.Structured(list), nil
}

func (s *Server) cancelRun(ctx context.Context, _ string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.CancelRunArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	err := s.access.Run(ctx, principal(ctx), auth.RunsWrite, a.RunID)
	if errors.Is(err, runner.ErrNotFound) || errors.Is(err, auth.ErrForbidden) {
		return nil, fmt.Errorf("reading run %s: %w", a.RunID, runner.ErrNotFound) // as ownRun answers
	}
	if err != nil {
		return nil, err
	}
	run, err := s.deps.Engine.Cancel(context.WithoutCancel(ctx), a.RunID)
	if err != nil {
		return nil, err
	}
	return tools.Structured(tools.ResultOf(run)), nil
}

// resumeHook sends the payload to the hook token in the session's environment (checked
// against the waiting hook's ask, runner.Engine.Deliver) and answers with what became of
// it and the state of the run that owns it, after it took the payload. It needs runs:write on that run's workflow
// (see ownHook).
func (s *Server) resumeHook(ctx context.Context, env string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.ResumeHookArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	if err := s.ownHook(ctx, principal(ctx), env, a.Token); err != nil {
		return nil, err
	}
	res, err := s.deps.Engine.Deliver(context.WithoutCancel(ctx), env, a.Token, a.Payload, runner.ResumeWait)
	if err != nil {
		return nil, err
	}
	return tools.Structured(tools.ResumedOf(a.Token, res)), nil
}

// ownHook checks that p may resume the hook token in env: runs:write on the run that owns
// it. A hook p may not resume is runner.ErrNotFound, in the words of one no run holds, so
// that neither its existence nor its workflow is revealed (SPEC §9: over MCP, what a token
// may not touch is not there).
func (s *Server) ownHook(ctx context.Context, p auth.Principal, env, token string) error {
	err := s.access.Hook(ctx, p, auth.RunsWrite, env, token)
	if errors.Is(err, runner.ErrNotFound) || errors.Is(err, auth.ErrForbidden) {
		return fmt.Errorf("resuming hook %q: %w", token, runner.ErrNotFound)
	}
	return err
}
