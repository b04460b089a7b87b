package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/internal/tracing"
)

// callerTrace is ctx carrying the traceparent of a tools/call's params._meta.traceparent
// (SPEC §7), the parent of the admission's span; ctx as it is without one (a traceparent
// header of the HTTP request, read by the router, then stands).
func callerTrace(ctx context.Context, meta *mcp.Meta) context.Context {
	if meta == nil {
		return ctx
	}
	tp, _ := meta.AdditionalFields[tracing.Header].(string)
	return tracing.WithParent(ctx, tp)
}
