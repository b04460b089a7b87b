package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/admission"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// errUnauthenticated is a protocol error: the transport put no principal in the context.
var errUnauthenticated = errors.New("no authenticated principal")

// workflowHandler answers calls of one workflow's tool in env.
func (s *Server) workflowHandler(env string, t *tools.Tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := auth.PrincipalFrom(ctx); !ok {
			return nil, errUnauthenticated
		}
		call, problems := tools.ParseCall(rawArguments(req))
		if problems != nil {
			return argumentProblems(t, "", problems), nil
		}
		return s.runTool(ctx, req, env, t, call, "")
	}
}

// runTool starts (or replays) a run of t's workflow for a call and answers with its state
// once it stops running or the tool's timeout passes (or a question for the person, see
// answer): the one path of a workflow's own tool and of gorunner_run_workflow. The
// workflow's arguments sit at path at of the call's ("" for t's own tool); the engine's
// admission checks them, once, against the version it admits the run at.
func (s *Server) runTool(ctx context.Context, req mcp.CallToolRequest, env string, t *tools.Tool, call *tools.Call, at string) (*mcp.CallToolResult, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, errUnauthenticated
	}
	if bad := progressTokenProblem(req); bad != nil {
		return bad, nil
	}
	release, err := s.deps.Engine.ReserveWait(p.ID) // before the run starts: a refused call does nothing
	if err != nil {
		return s.errorResult(ctx, err)
	}
	defer release()
	if st, ok := askStateOf(req); ok {
		return s.continueAsk(ctx, req, t, st) // the person's answer to a question of the run's
	}
	run, ad, problems, err := s.admitCall(callerTrace(ctx, req.Params.Meta), p, env, t, call, false)
	if problems != nil {
		return argumentProblems(t, at, problems), nil
	}
	if err != nil {
		return s.errorResult(ctx, err)
	}
	if run, err = s.settle(ctx, req, run, s.toolTimeout(t)); err != nil {
		return s.errorResult(ctx, err)
	}
	return s.answer(ctx, run, ad), nil
}

// admitCall is start for a call of t's workflow, with the problems of its arguments
// instead of a run: a key of the wrong length, or an input the engine refused for the
// workflow's input schema. With a wrong key nothing is admitted, and the input's own
// problems are listed beside the key's, so that the agent fixes all at once.
func (s *Server) admitCall(ctx context.Context, p auth.Principal, env string, t *tools.Tool, call *tools.Call, task bool) (*runner.Run, admitted, []schemas.Problem, error) {
	if problems := call.KeyProblems(); problems != nil {
		return nil, admitted{}, s.withInputProblems(ctx, env, t, call, problems, nil), nil
	}
	run, ad, err := s.start(ctx, p, env, t.Definition.Name, call, task)
	var ie *runner.InputError
	if errors.As(err, &ie) {
		return nil, admitted{}, ie.Problems, nil
	}
	return run, ad, nil, err
}

// admitted is how a call's run was come by: replayed, its key had been used before (the
// first call's run); reused, the run is the owner of the workflow's start token (SPEC §6).
type admitted struct {
	replayed, reused bool
}

// withInputProblems lists own, the problems a call of t's workflow is refused for before
// its admission, with the problems the engine's admission finds in the call's input (made
// by place into own's terms; nil keeps them as they are), by path, so that the agent fixes
// all at once; nothing is admitted.
func (s *Server) withInputProblems(ctx context.Context, env string, t *tools.Tool, call *tools.Call, own []schemas.Problem, place func([]schemas.Problem) []schemas.Problem) []schemas.Problem {
	_, err := s.deps.Engine.Prepare(ctx, runner.SubmitParams{Workflow: t.Definition.Name, Environment: env, Input: call.Input})
	var ie *runner.InputError
	if errors.As(err, &ie) {
		input := ie.Problems
		if place != nil {
			input = place(input)
		}
		own = append(own, input...)
	}
	return byPath(own)
}

// byPath sorts problems by path, in place, keeping the order of those at one path.
func byPath(problems []schemas.Problem) []schemas.Problem {
	slices.SortStableFunc(problems, func(a, b schemas.Problem) int { return strings.Compare(a.Path, b.Path) })
	return problems
}

// argumentProblems is the isError result for problems with the arguments of t's workflow
// (placed).
func argumentProblems(t *tools.Tool, at string, problems []schemas.Problem) *mcp.CallToolResult {
	return tools.InvalidArguments(nil, placed(t, at, problems))
}

// placed are problems with the arguments of t's workflow, explained from t's input schema
// and placed at path at of the call's arguments.
func placed(t *tools.Tool, at string, problems []schemas.Problem) []schemas.Problem {
	problems = tools.Explain(t.Tool.RawInputSchema, problems)
	for i := range problems {
		problems[i].Path = at + problems[i].Path
	}
	return problems
}

// rawArguments are the call's arguments as sent, so that big integers keep their digits.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	raw, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil
	}
	return raw
}

// toolTimeout is how long a call of t waits for its run.
func (s *Server) toolTimeout(t *tools.Tool) time.Duration {
	d := t.Definition.ToolTimeout.Std()
	if d <= 0 {
		d = s.cfg.ToolTimeout
	}
	return min(d, s.cfg.MaxToolTimeout)
}

// start admits the run through the one admission path, with a key as exactly the REST
// request POST /api/workflows/{name}/run?environment=<env> with the input as body, so a
// REST retry and an MCP call replay each other; a replay answers with the first run's
// current state, read by the run ID its key's record names. The admission outlives a
// cancelled request: only the waiting stops. task marks a new run as started as a task
// (runner.Run.Task), which tasks/list lists.
func (s *Server) start(ctx context.Context, p auth.Principal, env, name string, c *tools.Call, task bool) (*runner.Run, admitted, error) {
	req := admission.Request{Workflow: name, Name: name, Environment: env, Input: c.Input, By: &p, Task: task, RunOnly: true,
		Trigger: runner.Trigger{Type: runner.TriggerMCP}}
	if c.HasKey {
		req.Keyed, req.Key, req.Scope = true, c.Key, idempotency.PrincipalScope(p.ID)
	}
	res, err := admission.Start(ctx, s.deps.Engine, s.deps.Idempotency, req)
	switch {
	case err != nil:
		return nil, admitted{}, err
	case res.Run != nil:
		return res.Run, admitted{reused: res.Reused}, nil
	case res.RunID == "":
		return nil, admitted{}, fmt.Errorf("the kept answer (status %d) names no run", res.Status)
	}
	run, err := s.deps.Engine.Get(ctx, res.RunID)
	return run, admitted{replayed: res.Replayed, reused: res.Reused}, err
}

// settle is await for a run just read or just admitted: one already settled for the wait
// (ended, or waiting, but not on a sleep that ends within it: Engine.Settled) is the answer
// as it is, without the second read of the run that Wait's feed would make. A replay so costs the key's read and
// one run read, and a run that ended in its admission no read at all.
func (s *Server) settle(ctx context.Context, req mcp.CallToolRequest, run *runner.Run, d time.Duration) (*runner.Run, error) {
	if !s.deps.Engine.Settled(run, d) {
		return s.await(ctx, req, run, d)
	}
	if token, ok := progressToken(req); ok {
		s.newProgress(ctx, token).finish(run)
	}
	return run, nil
}

// progressToken is the token the call asked its progress to be reported under, if any.
func progressToken(req mcp.CallToolRequest) (mcp.ProgressToken, bool) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil, false
	}
	return req.Params.Meta.ProgressToken, true
}

// await waits up to d for run to stop running, reporting finished steps as progress when
// the call asked for it. A cancelled request ends the wait, never the run.
func (s *Server) await(ctx context.Context, req mcp.CallToolRequest, run *runner.Run, d time.Duration) (*runner.Run, error) {
	var pr *progress
	if token, ok := progressToken(req); ok {
		pr = s.watchProgress(ctx, token, run)
	}
	final, err := s.deps.Engine.Wait(ctx, run.ID, d)
	if pr != nil {
		pr.stop(final)
	}
	if err != nil {
		return nil, err
	}
	return final, nil
}
