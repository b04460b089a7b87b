package mcpserver

import (
	"context"
	"log/slog"
)

// transportLog is the logger mcp-go's streamable HTTP transport logs through: the server's,
// with the transport's words for a client's answer corrected. mcp-go logs every answer to a
// request of ours (elicitation/create, roots/list, sampling) as a "sampling response".
func transportLog(log *slog.Logger) *slog.Logger {
	return slog.New(transportHandler{log.Handler()})
}

// deliveredWords are mcp-go's words for a client's answer, and what this log says instead.
const (
	deliveredWords = "Delivered sampling response"
	deliveredSaid  = "Delivered the client's response to a server request"
)

// transportHandler rewrites deliveredWords.
type transportHandler struct{ slog.Handler }

// Handle logs r, deliveredWords rewritten.
func (h transportHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == deliveredWords {
		out := slog.NewRecord(r.Time, r.Level, deliveredSaid, r.PC)
		r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
		r = out
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the rewriting on the handler with attrs.
func (h transportHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return transportHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the rewriting on the handler in group name.
func (h transportHandler) WithGroup(name string) slog.Handler {
	return transportHandler{h.Handler.WithGroup(name)}
}
