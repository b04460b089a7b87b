package mcpserver

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/problem"
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

// problemOf maps the errors an agent can act on to the REST API's status and code, with
// what the agent should do next (one mapping: problem.ForAgent).
func problemOf(err error) (tools.Problem, bool) {
	e, ok := problem.ForAgent(err)
	if !ok {
		return tools.Problem{}, false
	}
	return tools.Problem{Status: e.Status, Code: e.Code, Message: e.Message, Details: e.Details}, true
}
