package api

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/stretchr/testify/require"
)

// TestLogHandlerAddsRequestIDAndRedactsTokens: the redaction itself is logredact's, tested
// there; this checks that the API's handler adds the request ID once and still redacts.
func TestLogHandlerAddsRequestIDAndRedactsTokens(t *testing.T) {
	t.Parallel()
	const token = "gr_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd"
	ctx := context.WithValue(context.Background(), middleware.RequestIDKey, "req-42")
	var buf bytes.Buffer
	log := slog.New(LogHandler(LogHandler(slog.NewJSONHandler(&buf, nil))))
	log.With("auth", token).InfoContext(ctx, "call", "route", "/api/runs")
	out := buf.String()
	require.NotContains(t, out, token)
	require.Contains(t, out, `"auth":"gr_AbCd…[redacted]"`)
	require.Contains(t, out, `"request_id":"req-42"`)
	require.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("request_id")), "wrapping twice adds the ID once")
}
