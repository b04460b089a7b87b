// Package admission is the one path that starts a run, for every surface: REST (and the
// CLI through it), webhooks and MCP tool calls. It takes the canonical request keyed replay
// fingerprints (SPEC §4 rule 11) and, with an idempotency key, commits the key, the run, its
// first wake-up, its start-token claim, this engine's lease and the kept answer in one
// store write (idempotency.Service.Admit over runner.Engine.Commit). A crash leaves either
// none of them or all of them; a replay reads only the kept answer (and the caller the run
// its record names).
package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// Request is one request to start a run.
type Request struct {
	// Workflow is the workflow's ID or name as the caller gave it.
	Workflow string
	// Name is the workflow's name: keyed replay fingerprints the request as
	// POST RunPath(Name)?environment=<Environment>, whichever way the caller named it.
	Name string
	// Environment is runner.EnvProduction or runner.EnvTest ("" = production).
	Environment string
	// Input is the run input as sent; empty means {}.
	Input json.RawMessage
	// By is the principal starting the run; nil for a webhook (runner.SubmitParams.By).
	By *auth.Principal
	// Task says the run is started as an MCP task (runner.Run.Task).
	Task bool
	// Trigger says what starts the run (runner.Run.Trigger); zero means api.
	Trigger runner.Trigger
	// RunOnly says the caller reads an unkeyed admission's run from Result.Run, not its
	// REST answer: the answer then has Status and RunID, and no body is encoded.
	RunOnly bool

	// Keyed says the request carries an idempotency key: Key (1 to 255 characters of valid UTF-8, else
	// idempotency.ErrInvalidKey).
	Keyed bool
	Key   string
	// Scope is whose the key is (idempotency.PrincipalScope or WorkflowScope).
	Scope string
	// Policy varies the key rules per surface (webhooks keep failures, evict the oldest).
	Policy idempotency.Policy
	// Failed renders an error as the answer Policy.KeepFailures keeps (the surface's error
	// envelope); nil when failures are not kept.
	Failed func(error) *idempotency.Response
}

// RunPath is the canonical path of a run request: the workflow by name. MCP tool calls are
// fingerprinted as this path, so a REST retry by ID or by name replays an MCP call.
func RunPath(workflowName string) string { return "/api/workflows/" + workflowName + "/run" }

// Result is Start's answer.
type Result struct {
	// Response is the answer POST /api/workflows/{id}/run gives (202 with the new run, or
	// 200 with the owner of its start token, SPEC §6) with RunID set; with a live key, a
	// replay of the kept answer (Replayed set).
	*idempotency.Response
	// Run is the run this call admitted, as its admission wrote it (it may have run steps,
	// even ended: see runner.Engine.Commit), or the run it reused; nil for a replay, whose
	// run the caller reads by RunID if it needs it.
	Run *runner.Run
	// Reused says the answer is the start token's owner run, not a new run (SPEC §6:
	// reject, adopt), also on a replay.
	Reused bool
}

// Start admits the run req asks for. With a key that is live it answers as
// idempotency.Service.Admit does (a replay or an idempotency error). The admission
// outlives a cancelled request once it writes. It is traced as one admission span
// (runner.Engine.TraceAdmission), the child of ctx's traceparent.
func Start(ctx context.Context, eng *runner.Engine, keys *idempotency.Service, req Request) (res *Result, err error) {
	trigger := req.Trigger.Type
	if trigger == "" {
		trigger = runner.TriggerAPI
	}
	ctx, end := eng.TraceAdmission(ctx, trigger)
	defer func() { end(res.run(), err) }()
	return start(ctx, eng, keys, req)
}

// run is the run r names, when it holds it; nil for no result.
func (r *Result) run() *runner.Run {
	if r == nil {
		return nil
	}
	return r.Run
}

// start is Start within the admission's span.
func start(ctx context.Context, eng *runner.Engine, keys *idempotency.Service, req Request) (*Result, error) {
	if len(bytes.TrimSpace(req.Input)) == 0 {
		req.Input = json.RawMessage(`{}`)
	}
	p := runner.SubmitParams{Workflow: req.Workflow, Environment: req.Environment, Input: req.Input, By: req.By, Task: req.Task, Trigger: req.Trigger}
	var prepared *runner.Admission
	var admitted *runner.Run // the run this call admitted or reused, whichever path wrote it
	reused := false
	fallback := func(ctx context.Context) (*idempotency.Response, error) {
		res, err := submit(ctx, eng, p, prepared)
		if err != nil && req.Failed != nil {
			return req.Failed(err), nil
		}
		if err != nil {
			return nil, err
		}
		admitted, reused = res.Run, res.Reused
		if res.Written != nil {
			admitted = res.Written
		}
		if req.RunOnly && !req.Keyed {
			return &idempotency.Response{Status: answerStatus(res), RunID: res.Run.ID}, nil
		}
		return Answer(res)
	}
	if !req.Keyed {
		resp, err := fallback(ctx)
		return result(resp, admitted, reused, err)
	}
	resp, err := keys.Admit(ctx, keyedRequest(req), idempotency.Admission{
		Prepare: func(ctx context.Context) (*idempotency.Prepared, error) {
			a, err := eng.Prepare(ctx, p)
			if err != nil {
				return nil, err
			}
			prepared, admitted = a, a.Run
			return preparedAnswer(eng, a)
		},
		Fallback: fallback,
	})
	if prepared != nil && admitted == prepared.Run && prepared.Written != nil {
		admitted = prepared.Written // the one write was made
	}
	return result(resp, admitted, reused, err)
}

// result pairs an answer with the run this call admitted or reused (reused says which),
// unless the answer is a replay or names another run (the key was taken by another
// request meanwhile); a replay says what the kept answer says.
func result(resp *idempotency.Response, admitted *runner.Run, reused bool, err error) (*Result, error) {
	if err != nil {
		return nil, err
	}
	if resp.Replayed || admitted == nil || admitted.ID != resp.RunID {
		return &Result{Response: resp, Reused: keptReused(resp)}, nil
	}
	return &Result{Response: resp, Run: admitted, Reused: reused}, nil
}

// keptReused reads a kept answer's "reused" (Answer writes it): only a 200 can carry it.
func keptReused(resp *idempotency.Response) bool {
	if resp.Status != http.StatusOK || len(resp.Body) == 0 {
		return false
	}
	var answer struct {
		Reused bool `json:"reused"`
	}
	return json.Unmarshal(resp.Body, &answer) == nil && answer.Reused
}

// keyedRequest is req as keyed replay sees it: the canonical REST request.
func keyedRequest(req Request) idempotency.Request {
	env := req.Environment
	if env == "" {
		env = runner.EnvProduction
	}
	return idempotency.Request{
		Scope:  req.Scope,
		Key:    req.Key,
		Method: http.MethodPost,
		Path:   RunPath(req.Name),
		Query:  url.Values{"environment": {env}},
		Body:   req.Input,
		Policy: req.Policy,
	}
}

// preparedAnswer is a prepared run's answer and its one write. A start token owned by
// another run cannot be answered in that write (the answer is then the owner's run), nor
// a workflow changed since Prepare (the answer is then another run's), nor a run under a
// concurrency limit (its answer, pending or queued, is the write's): idempotency.ErrSplit
// sends the request down the claim → submit → complete path.
func preparedAnswer(eng *runner.Engine, a *runner.Admission) (*idempotency.Prepared, error) {
	answer, err := Answer(&runner.SubmitResult{Run: a.Run})
	if err != nil {
		return nil, err
	}
	write := func(ctx context.Context, key *idempotency.KeyWrite) (idempotency.ClaimResult, error) {
		if a.Limited() {
			return idempotency.ClaimResult{}, idempotency.ErrSplit
		}
		res, err := eng.Commit(ctx, a, key)
		var conflict *runner.TokenConflictError
		if errors.As(err, &conflict) || errors.Is(err, runner.ErrTargetChanged) {
			return res, idempotency.ErrSplit
		}
		return res, err
	}
	return &idempotency.Prepared{Answer: answer, Write: write}, nil
}

// submit admits without the key's one write: the run a's Prepare built when there is one
// (so nothing is resolved or validated twice), else a new one from p.
func submit(ctx context.Context, eng *runner.Engine, p runner.SubmitParams, a *runner.Admission) (*runner.SubmitResult, error) {
	ctx = context.WithoutCancel(ctx)
	if a != nil {
		return eng.Admit(ctx, a)
	}
	return eng.Submit(ctx, p)
}

// Answer is the REST answer to an admission: 202 with the new run, or 200 with the token
// owner's run marked reused or forwarded (SPEC §6), encoded once here for every surface, so
// that a kept answer replays the same on any of them.
func Answer(res *runner.SubmitResult) (*idempotency.Response, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wire.SubmittedOf(res)); err != nil {
		return nil, fmt.Errorf("encoding the run: %w", err)
	}
	header := http.Header{"Content-Type": {"application/json"}}
	return &idempotency.Response{Status: answerStatus(res), Header: header, Body: buf.Bytes(), RunID: res.Run.ID}, nil
}

// answerStatus is the status of Answer: 202 for a new run, 200 for the token owner's.
func answerStatus(res *runner.SubmitResult) int {
	if res.Reused || res.Forwarded {
		return http.StatusOK
	}
	return http.StatusAccepted
}
