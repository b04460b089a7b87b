package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

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

// problemOf maps the errors an agent can act on to the SPEC's codes.
func problemOf(err error) (tools.Problem, bool) {
	var inputErr *runner.InputError
	var conflict *runner.TokenConflictError
	var limit *idempotency.LimitError
	switch {
	case errors.As(err, &inputErr):
		return tools.Problem{Status: http.StatusBadRequest, Code: "VALIDATION_ERROR",
			Message: "the arguments are not a valid input: " + inputErr.Error(), Details: inputErr.Problems}, true
	case errors.As(err, &conflict):
		return tools.Problem{Status: http.StatusConflict, Code: "CONFLICT",
			Message: fmt.Sprintf("run %s already holds the start token %q; read it with gorunner_get_run", conflict.OwnerRunID, conflict.Token)}, true
	case errors.As(err, &limit):
		return tools.Problem{Status: http.StatusTooManyRequests, Code: "RATE_LIMITED",
			Message: fmt.Sprintf("too many idempotency keys are kept for you; retry after %v, or call without idempotencyKey", limit.RetryAfter)}, true
	}
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			return tools.Problem{Status: m.status, Code: m.code, Message: m.message}, true
		}
	}
	return tools.Problem{}, false
}

// errorCodes are the sentinels an agent can act on, with the code and advice it gets.
var errorCodes = []struct {
	err     error
	status  int
	code    string
	message string
}{
	{idempotency.ErrKeyMismatch, http.StatusUnprocessableEntity, "VALIDATION_ERROR",
		"this idempotencyKey was already used with other arguments (or another environment); use a new key, or repeat the first call's arguments exactly"},
	{idempotency.ErrInProgress, http.StatusConflict, "CONFLICT",
		"a call with this idempotencyKey is still being answered; retry the same call in a moment"},
	{idempotency.ErrAnswerNotKept, http.StatusConflict, "CONFLICT",
		"a call with this idempotencyKey already started a run but its answer was too large to keep; find the run with gorunner_list_runs"},
	{idempotency.ErrInvalidKey, http.StatusBadRequest, "VALIDATION_ERROR",
		"idempotencyKey must be 1 to 255 characters"},
	{runner.ErrWorkflowNotFound, http.StatusNotFound, "NOT_FOUND",
		"the workflow no longer exists; list the tools again"},
	{catalog.ErrNotFound, http.StatusNotFound, "NOT_FOUND",
		"no such workflow"},
	{runner.ErrNotPublished, http.StatusConflict, "CONFLICT",
		"the workflow has no published version any more; list the tools again"},
	{runner.ErrNotFound, http.StatusNotFound, "NOT_FOUND",
		"no such run, or no run waits on that hook token (it may not be registered yet: retry shortly)"},
	{runner.ErrFinished, http.StatusConflict, "CONFLICT",
		"the run has already finished"},
}
