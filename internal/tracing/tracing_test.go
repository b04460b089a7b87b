package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/gorunner/gorunner/internal/tracing"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestEnabled(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"other OTEL variables alone", map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"}, false},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_TRACES_EXPORTER": "none"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tracing.Enabled(func(k string) string { return tc.env[k] }))
		})
	}
}

// TestSetupOff: with no endpoint variable nothing is built, whatever else is set, and the
// nil provider's tracer is nil (the engine then starts no span) and its shutdown a no-op.
func TestSetupOff(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	p, err := tracing.Setup(context.Background(), "v0")
	require.NoError(t, err)
	require.Nil(t, p)
	require.Nil(t, p.Tracer())
	require.NoError(t, p.Shutdown(context.Background()))
}

// TestSetupExports: with the endpoint set, a span is exported over OTLP/HTTP to it by the
// time Shutdown returns.
func TestSetupExports(t *testing.T) {
	var exports atomic.Int32
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			exports.Add(1)
		}
	}))
	defer rc.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	p, err := tracing.Setup(context.Background(), "v0")
	require.NoError(t, err)
	_, span := p.Tracer().Start(context.Background(), "one")
	span.End()
	require.NoError(t, p.Shutdown(context.Background()))
	require.Equal(t, int32(1), exports.Load())
}

func TestSetupProtocols(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		p, err := tracing.Setup(context.Background(), "v0")
		require.NoError(t, err, protocol)
		require.NoError(t, p.Shutdown(context.Background()))
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
	_, err := tracing.Setup(context.Background(), "v0")
	require.ErrorContains(t, err, `OTLP protocol "http/json"`)
}

func TestParentRoundTrip(t *testing.T) {
	ctx := tracing.WithParent(context.Background(), parent)
	require.Equal(t, parent, tracing.TraceParent(ctx))
	sc := trace.SpanContextFromContext(ctx)
	require.True(t, sc.IsRemote())
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())

	for _, bad := range []string{"", "00-zz-00f067aa0ba902b7-01", "not a traceparent"} {
		require.Empty(t, tracing.TraceParent(tracing.WithParent(context.Background(), bad)), "%q", bad)
	}
	h := http.Header{}
	tracing.Inject(context.Background(), h)
	require.Empty(t, h, "no span, no header")
	tracing.Inject(ctx, h)
	require.Equal(t, parent, h.Get(tracing.Header))
	require.Equal(t, parent, tracing.TraceParent(tracing.Extract(context.Background(), h)))
}

func TestMiddleware(t *testing.T) {
	var got string
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = tracing.TraceParent(r.Context()) })
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(tracing.Header, parent)
	tracing.Middleware(nil)(next).ServeHTTP(httptest.NewRecorder(), req)
	require.Empty(t, got, "off: the header is not read")

	tracing.Middleware(noop.NewTracerProvider().Tracer("t"))(next).ServeHTTP(httptest.NewRecorder(), req)
	require.Equal(t, parent, got, "a traceparent header is the parent of the request's spans")
}

// TestHostileParentIgnored: a traceparent a caller sends that is not W3C's (garbage, a
// megabyte, an all-zero trace ID, an unknown version with a bad length) gives no parent, so
// the admission starts a trace of its own and nothing of the text is kept or sent on.
func TestHostileParentIgnored(t *testing.T) {
	for _, tp := range []string{
		"garbage",
		strings.Repeat("0", 1<<20),
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		parent + "\r\nX-Injected: 1",
	} {
		ctx := tracing.WithParent(context.Background(), tp)
		require.False(t, trace.SpanContextFromContext(ctx).IsValid(), "%.40q", tp)
		require.Empty(t, tracing.TraceParent(ctx))
	}
}
