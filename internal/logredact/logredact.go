// Package logredact keeps GoRunner's bearer secrets out of logs: a slog.Handler that
// redacts API tokens (gr_…) and webhook tokens (wh_…) in every message and string or error
// value, whichever package logs them. Every process face (`gorunner serve`, `gorunner mcp`)
// logs through it, and the REST API wraps its own logger in it too.
package logredact

import (
	"context"
	"log/slog"
	"regexp"
)

// secretPattern matches GoRunner's bearer secrets: API tokens (gr_…) and webhook tokens
// (wh_…), which may ride in a path or an error text.
var secretPattern = regexp.MustCompile(`\b(gr|wh)_[A-Za-z0-9_-]{16,}`)

// String is s with every secret redacted. A redacted secret keeps its kind and its first
// four characters, enough to tell tokens apart in a log.
func String(s string) string {
	return secretPattern.ReplaceAllStringFunc(s, func(m string) string { return m[:7] + "…[redacted]" })
}

// Handler wraps h so that secrets in messages, attributes (in groups too, and those added
// with With) and error values are redacted before h sees them. Wrapping twice changes
// nothing.
func Handler(h slog.Handler) slog.Handler {
	if r, ok := h.(*handler); ok {
		return r
	}
	return &handler{next: h}
}

type handler struct{ next slog.Handler }

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = attr(a)
	}
	return &handler{next: h.next.WithAttrs(clean)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name)}
}

// attr redacts secrets in a, its group members and its error or string values.
func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, String(err.Error()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
