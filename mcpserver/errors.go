package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/tools"
)

// errInternal is the protocol error an unexpected failure becomes; its cause is logged,
// never sent.
var errInternal = errors.New("internal error; see the server log")

// errorResult turns a failure into what the agent gets: an isError tool result with the
// code the REST API would answer and what to do next, or, for a cancelled request or an
// unexpected failure, a protocol error.
func (s *Server) errorResult(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	if p, ok := problemOf(err); ok {
		return p.Result(), nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.log.ErrorContext(ctx, "mcp: tool call failed", "err", err)
	return nil, errInternal
}

// problemOf maps the errors an agent can act on to the REST API's status and code (one
// mapping: api.Classify), adding what the agent should do next.
func problemOf(err error) (tools.Problem, bool) {
	e, ok := api.Classify(err)
	if !ok {
		return tools.Problem{}, false
	}
	msg := e.Message
	for _, a := range advice {
		if errors.Is(err, a.err) {
			msg += ": " + a.text
			break
		}
	}
	var conflict *runner.TokenConflictError
	var limit *idempotency.LimitError
	switch {
	case errors.As(err, &conflict):
		msg = fmt.Sprintf("run %s already holds the start token %q; read it with gorunner_get_run", conflict.OwnerRunID, conflict.Token)
	case errors.As(err, &limit):
		msg = fmt.Sprintf("too many idempotency keys are kept for you; retry after %v, or call without idempotencyKey", e.RetryAfter)
	}
	return tools.Problem{Status: e.Status, Code: e.Code, Message: msg, Details: e.Details}, true
}

// advice says what an agent should do next after an error it can act on.
var advice = []struct {
	err  error
	text string
}{
	{idempotency.ErrKeyMismatch, "this idempotencyKey was already used with other arguments (or another environment); use a new key, or repeat the first call's arguments exactly"},
	{idempotency.ErrInProgress, "a call with this idempotencyKey is still being answered; retry the same call in a moment"},
	{idempotency.ErrAnswerNotKept, "a call with this idempotencyKey already started a run but its answer was too large to keep; find the run with gorunner_list_runs"},
	{idempotency.ErrInvalidKey, "idempotencyKey must be 1 to 255 characters"},
	{runner.ErrWorkflowNotFound, "the workflow no longer exists; list the tools again"},
	{runner.ErrNotPublished, "the workflow has no published version any more; list the tools again"},
	{runner.ErrTooManyWaits, "call gorunner_get_run without waitSeconds, or wait for one of your other calls to answer"},
	{runner.ErrNotFound, "no such run, or no run waits on that hook token (it may not be registered yet: retry shortly); " +
		"runIds come from a workflow tool's answer or gorunner_list_runs, hook tokens from a waiting run's waitingOn.hook"},
	{runner.ErrFinished, "the run has already finished, so there is nothing to cancel; read its outcome with gorunner_get_run"},
	{catalog.ErrNotFound, "no workflow has that name or ID; workflow names are the tool names tools/list gives, or what gorunner_find_workflows finds"},
}
