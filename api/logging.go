package api

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// secretPattern matches GoRunner's bearer secrets: API tokens (gr_…) and webhook tokens
// (wh_…), which may ride in a path or an error text.
var secretPattern = regexp.MustCompile(`\b(gr|wh)_[A-Za-z0-9_-]{16,}`)

// LogHandler wraps h for a process that serves the API: every record logged with a
// request's context carries its request_id, and API and webhook tokens in string values
// are redacted, whichever package logs them.
// Wrapping twice changes nothing.
func LogHandler(h slog.Handler) slog.Handler {
	if l, ok := h.(*logHandler); ok {
		return l
	}
	return &logHandler{next: h}
}

type logHandler struct{ next slog.Handler }

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.next.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, redact(rec.Message), rec.PC)
	if id := middleware.GetReqID(ctx); id != "" {
		out.AddAttrs(slog.String("request_id", id))
	}
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return l.next.Handle(ctx, out)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a)
	}
	return &logHandler{next: l.next.WithAttrs(clean)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{next: l.next.WithGroup(name)}
}

// redactAttr redacts secrets in a, its group members and its error or string values.
func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = redactAttr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, redact(err.Error()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// redact keeps a secret's kind and its first four characters, enough to tell tokens apart.
func redact(s string) string {
	return secretPattern.ReplaceAllStringFunc(s, func(m string) string { return m[:7] + "…[redacted]" })
}

// routeOf is the matched route pattern (/webhooks/{token}), which unlike the path never
// holds a token; the path when no route matched.
func routeOf(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return redact(r.URL.Path)
}
