package mcpserver

import (
	"context"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/tools"
)

// errInternal is the protocol error an unexpected failure becomes; its cause is logged,
// never sent.
var errInternal = errors.New("internal error; see the server log")

// storeUnavailable is the tool error of a call the store could not serve: the REST API's
// 503, and what to do, without the cause (an address, a path), which is logged.
var storeUnavailable = tools.Problem{Status: http.StatusServiceUnavailable, Code: problem.CodeUnavailable,
	Message: "the store is unavailable right now; retry the call in a few seconds (with the same idempotencyKey, if you sent one, so that a run it may have started is not started twice)"}

// errorResult turns a failure into what the agent gets: an isError tool result with the
// code the REST API would answer and what to do next (storeUnavailable when the store
// could not serve the call, by the REST API's rule), or, for a cancelled request or an
// unexpected failure, a protocol error.
func (s *Server) errorResult(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	if p, ok := problemOf(err); ok {
		return p.Result(), nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if s.storeDown(ctx, "tool call", err) {
		return storeUnavailable.Result(), nil
	}
	s.log.ErrorContext(ctx, "mcp: tool call failed", "err", err)
	return nil, errInternal
}

// storeDown reports whether err, a failure of what (a tool call, a task request)
// with no answer of its own, is the store's outage (store.Unavailable, as the REST API
// decides its 503), and logs it if so.
func (s *Server) storeDown(ctx context.Context, what string, err error) bool {
	if !store.Unavailable(ctx, err, s.deps.Ready) {
		return false
	}
	s.log.WarnContext(ctx, "mcp: "+what+" failed, store unavailable", "err", err)
	return true
}

// problemOf maps the errors an agent can act on to the REST API's status and code, with
// what the agent should do next (one mapping: problem.ForAgent).
func problemOf(err error) (tools.Problem, bool) {
	e, ok := problem.ForAgent(err)
	if !ok {
		return tools.Problem{}, false
	}
	return tools.Problem{Status: e.Status, Code: e.Code, Message: e.Message, Details: e.Details}, true
}
