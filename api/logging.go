package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/gorunner/gorunner/internal/logredact"
)

// LogHandler wraps h for a process that serves the API: every record logged with a
// request's context carries its request_id, and secrets are redacted (logredact), whichever
// package logs them. Wrapping twice changes nothing.
func LogHandler(h slog.Handler) slog.Handler {
	if l, ok := h.(*logHandler); ok {
		return l
	}
	return &logHandler{next: logredact.Handler(h)}
}

type logHandler struct{ next slog.Handler }

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.next.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id := middleware.GetReqID(ctx); id != "" {
		rec = rec.Clone()
		rec.AddAttrs(slog.String("request_id", id))
	}
	return l.next.Handle(ctx, rec)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{next: l.next.WithAttrs(attrs)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{next: l.next.WithGroup(name)}
}

// routeOf is the matched route pattern (/webhooks/{token}), which unlike the path never
// holds a token; the path, redacted, when no route matched.
func routeOf(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return logredact.String(r.URL.Path)
}
