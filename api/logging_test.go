package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/stretchr/testify/require"
)

func TestLogHandlerAddsRequestIDAndRedactsTokens(t *testing.T) {
	t.Parallel()
	const token = "gr_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd"
	const hook = "wh_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210"
	ctx := context.WithValue(context.Background(), middleware.RequestIDKey, "req-42")
	for _, tc := range []struct {
		name string
		log  func(*slog.Logger)
		want []string
	}{
		{"string attr", func(l *slog.Logger) { l.InfoContext(ctx, "call", "route", "/webhooks/"+hook) },
			[]string{`"request_id":"req-42"`, `"route":"/webhooks/wh_ZyXw…[redacted]"`}},
		{"error attr", func(l *slog.Logger) { l.ErrorContext(ctx, "failed", "err", errors.New("bad token "+token)) },
			[]string{`"err":"bad token gr_AbCd…[redacted]"`}},
		{"group and With", func(l *slog.Logger) {
			l.With("auth", token).InfoContext(ctx, "x", slog.Group("g", "t", token))
		}, []string{`"auth":"gr_AbCd…[redacted]"`, `"g":{"t":"gr_AbCd…[redacted]"}`}},
		{"message", func(l *slog.Logger) { l.Info("token " + token) }, []string{`"msg":"token gr_AbCd…[redacted]"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(slog.New(LogHandler(LogHandler(slog.NewJSONHandler(&buf, nil)))))
			out := buf.String()
			require.NotContains(t, out, token)
			require.NotContains(t, out, hook)
			require.LessOrEqual(t, bytes.Count(buf.Bytes(), []byte("request_id")), 1, "wrapping twice adds the ID once")
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
		})
	}
}
