package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
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
		call, problems := validArguments(rawArguments(req), t.Input)
		if problems != nil {
			return tools.InvalidArguments(t.Tool.RawInputSchema, problems), nil
		}
		return s.runTool(ctx, req, env, t, call)
	}
}

// runTool starts (or replays) a run of t's workflow for a valid call and answers with its
// state once it stops running or the tool's timeout passes (or a question for the person,
// see answer): the one path of a workflow's own tool and of gorunner_run_workflow.
func (s *Server) runTool(ctx context.Context, req mcp.CallToolRequest, env string, t *tools.Tool, call *tools.Call) (*mcp.CallToolResult, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, errUnauthenticated
	}
	release, err := s.deps.Engine.ReserveWait(p.ID) // before the run starts: a refused call does nothing
	if err != nil {
		return s.errorResult(ctx, err)
	}
	defer release()
	if st, ok := askStateOf(req); ok {
		return s.continueAsk(ctx, req, t, st) // the person's answer to a question of the run's
	}
	run, replayed, err := s.start(ctx, p, env, t.Definition.Name, call)
	if err != nil {
		return s.errorResult(ctx, err)
	}
	run, err = s.await(ctx, req, run, s.toolTimeout(t))
	if err != nil {
		return s.errorResult(ctx, err)
	}
	return s.answer(ctx, run, replayed), nil
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

// start admits the run. With a key it goes through the keyed-replay store as exactly the
// REST request POST /api/workflows/{name}/run?environment=<env> with the input as body, so
// a REST retry and an MCP call replay each other; a replay answers with the first run's
// current state. The admission outlives a cancelled request: only the waiting stops.
func (s *Server) start(ctx context.Context, p auth.Principal, env, name string, c *tools.Call) (*runner.Run, bool, error) {
	var fresh *runner.Run
	submit := func(ctx context.Context) (*idempotency.Response, error) {
		res, err := s.deps.Engine.Submit(context.WithoutCancel(ctx), runner.SubmitParams{Workflow: name, Environment: env, Input: c.Input, StartedBy: p.ID})
		if err != nil {
			return nil, err
		}
		fresh = res.Run
		return submittedResponse(res)
	}
	if !c.HasKey {
		_, err := submit(ctx)
		return fresh, false, err
	}
	resp, err := s.deps.Idempotency.Do(ctx, idempotency.Request{
		Scope:  idempotency.PrincipalScope(p.ID),
		Key:    c.Key,
		Method: http.MethodPost,
		Path:   "/api/workflows/" + name + "/run",
		Query:  url.Values{"environment": {env}},
		Body:   c.Input,
	}, submit)
	if err != nil {
		return nil, false, err
	}
	if !resp.Replayed && fresh != nil {
		return fresh, false, nil
	}
	run, err := s.replayedRun(ctx, resp)
	return run, resp.Replayed, err
}

// submittedBody is the REST answer to a run admission, as api writes it.
type submittedBody struct {
	Data      *runner.Run `json:"data"`
	Reused    bool        `json:"reused,omitempty"`
	Forwarded bool        `json:"forwarded,omitempty"`
}

// submittedResponse is the answer POST /api/workflows/{name}/run gives: 202 with the new
// run, or 200 with the token owner's run marked reused or forwarded (SPEC §6), encoded as
// api encodes it, so that the kept answer replays the same on either surface.
func submittedResponse(res *runner.SubmitResult) (*idempotency.Response, error) {
	status := http.StatusAccepted
	if res.Reused || res.Forwarded {
		status = http.StatusOK
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(submittedBody{Data: res.Run, Reused: res.Reused, Forwarded: res.Forwarded}); err != nil {
		return nil, fmt.Errorf("encoding the run: %w", err)
	}
	header := http.Header{"Content-Type": {"application/json"}}
	return &idempotency.Response{Status: status, Header: header, Body: body.Bytes()}, nil
}

// replayedRun reads the current state of the run a kept answer names.
func (s *Server) replayedRun(ctx context.Context, resp *idempotency.Response) (*runner.Run, error) {
	var body struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || body.Data.ID == "" {
		return nil, fmt.Errorf("the kept answer (status %d) names no run", resp.Status)
	}
	return s.deps.Engine.Get(ctx, body.Data.ID)
}

// await waits up to d for run to stop running, reporting finished steps as progress when
// the call asked for it. A cancelled request ends the wait, never the run.
func (s *Server) await(ctx context.Context, req mcp.CallToolRequest, run *runner.Run, d time.Duration) (*runner.Run, error) {
	var pr *progress
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		pr = s.watchProgress(ctx, req.Params.Meta.ProgressToken, run)
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
