package mcpserver

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a tool call, the values of the metric's "outcome" label.
const (
	outcomeOK        = "ok"         // a result without isError
	outcomeToolError = "tool_error" // a result with isError: a failed run, invalid arguments
	outcomeError     = "error"      // a protocol error: cancelled, unauthenticated, internal
)

// metrics count tool calls; without a Registerer they still count, unseen.
type metrics struct {
	calls *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gorunner_mcp_tool_calls_total",
		Help: "MCP tool calls, by tool and outcome (ok, tool_error, error).",
	}, []string{"tool", "outcome"})
	if reg != nil {
		if err := reg.Register(calls); err != nil {
			return nil, fmt.Errorf("registering MCP metrics: %w", err)
		}
	}
	return &metrics{calls: calls}, nil
}

// middleware counts every call of every tool by its outcome.
func (m *metrics) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := next(ctx, req)
		outcome := outcomeOK
		switch {
		case err != nil:
			outcome = outcomeError
		case res != nil && res.IsError:
			outcome = outcomeToolError
		}
		m.calls.WithLabelValues(dispatchedName(req), outcome).Inc()
		return res, err
	}
}
