package main_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP traces endpoint that keeps what it is sent: the spans, and
// every request body as it came (to look for what must not be in any).
type otlpReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	spans  []*tracepb.Span
	bodies [][]byte
	names  []string // the resources' service.name
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP/HTTP traces export", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.bodies = append(rc.bodies, body)
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					rc.names = append(rc.names, kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		raw, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(raw)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// byName waits until n spans came and returns them by name.
func (rc *otlpReceiver) byName(t *testing.T, n int) map[string]*tracepb.Span {
	t.Helper()
	require.Eventually(t, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.spans) >= n
	}, time.Minute, 10*time.Millisecond)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Len(t, rc.spans, n)
	m := map[string]*tracepb.Span{}
	for _, s := range rc.spans {
		m[s.Name] = s
	}
	return m
}

func spanAttrs(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		if v, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
			m[kv.Key] = v.IntValue
			continue
		}
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

// TestTracesOverOTLP runs the real `gorunner mcp` with OTEL_EXPORTER_OTLP_ENDPOINT set to a
// receiver in the test and calls a 3-step workflow (set, an http step with a connection's
// secret, set) with a traceparent in _meta: the admission span is the child of the
// caller's span in its trace, the three step spans are the admission's children with the
// run and the step as attributes, the http step's target receives the traceparent of its
// attempt, and neither the connection's secret nor the input is in anything exported.
func TestTracesOverOTLP(t *testing.T) {
	t.Parallel()
	const secret, inputSecret = "trace-secret-9c1e", "input-secret-77"
	var mu sync.Mutex
	var sent []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Header.Get("traceparent"))
		mu.Unlock()
		fmt.Fprint(w, `{"ok": true}`)
	}))
	defer target.Close()
	u, err := url.Parse(target.URL)
	require.NoError(t, err)
	rc := newOTLPReceiver(t)

	dir := t.TempDir()
	s := startServe(t, dir)
	token := s.adminToken(t)
	conn, err := json.Marshal(map[string]any{"name": "pay", "type": "bearer", "secret": secret, "hosts": []string{u.Host}})
	require.NoError(t, err)
	status, body := call(t, token, "POST", s.url+"/api/connections", string(conn))
	require.Equal(t, 201, status, body)
	def := fmt.Sprintf(`{"name": "three", "input": {"type": "object"}, "steps": [
	  {"id": "first", "set": "${{ input.note }}"},
	  {"id": "charge", "http": {"url": "%s/charge", "connection": "pay"}},
	  {"id": "last", "set": {"done": true}}]}`, target.URL)
	status, body = call(t, token, "POST", s.url+"/api/workflows", def)
	require.Equal(t, 201, status, body)
	status, _ = call(t, token, "POST", s.url+"/api/workflows/three/publish", "")
	require.Equal(t, 201, status)
	s.stop()

	cmd := exec.Command(binary(t), "mcp", "--data-dir", dir, "--http-allow", "127.0.0.1")
	cmd.Env = append(os.Environ(), "GORUNNER_LOG_LEVEL=warn", "GORUNNER_TOKEN="+token,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+rc.URL, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=gorunner-test")
	cmd.Stderr = os.Stderr
	m := startRawMCPCmd(t, cmd)
	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res := m.request(t, 1, "tools/call", map[string]any{"name": "three", "arguments": map[string]any{"note": inputSecret},
		"_meta": map[string]any{"traceparent": "00-" + traceID + "-" + callerSpan + "-01"}}, time.Minute)
	run := res["structuredContent"].(map[string]any)
	require.Equal(t, "completed", run["status"], res)

	spans := rc.byName(t, 4)
	ad := spans["admit three"]
	require.NotNil(t, ad, "an admission span: %v", spans)
	require.Equal(t, traceID, hex.EncodeToString(ad.TraceId), "the admission is in the caller's trace")
	require.Equal(t, callerSpan, hex.EncodeToString(ad.ParentSpanId), "and the child of the caller's span")
	require.Equal(t, "mcp", spanAttrs(ad)["gorunner.trigger"])
	require.Equal(t, run["runId"], spanAttrs(ad)["gorunner.run.id"])
	for _, id := range []string{"first", "charge", "last"} {
		st := spans["step "+id]
		require.NotNil(t, st, "a span for step %s", id)
		require.Equal(t, traceID, hex.EncodeToString(st.TraceId))
		require.Equal(t, ad.SpanId, st.ParentSpanId, "step %s is the admission's child", id)
		a := spanAttrs(st)
		require.Equal(t, run["runId"], a["gorunner.run.id"])
		require.Equal(t, "three", a["gorunner.workflow"])
		require.Equal(t, id, a["gorunner.step.path"])
		require.NotEmpty(t, a["gorunner.step.id"])
		require.Equal(t, int64(1), a["gorunner.step.attempt"])
	}
	charge := spans["step charge"]
	mu.Lock()
	require.Equal(t, []string{"00-" + traceID + "-" + hex.EncodeToString(charge.SpanId) + "-01"}, sent,
		"the http step sends its attempt's traceparent")
	mu.Unlock()

	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Contains(t, rc.names, "gorunner-test", "OTEL_SERVICE_NAME names the service")
	for _, b := range rc.bodies {
		require.False(t, bytes.Contains(b, []byte(secret)), "no connection secret in any span")
		require.False(t, bytes.Contains(b, []byte(inputSecret)), "no input in any span")
	}
}
