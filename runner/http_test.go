package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// recorder is an HTTP server that answers with the next status of a script (then 200) and
// records every request.
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	requests []recorded
}

type recorded struct {
	method, path, query, key, auth, contentType, body, traceparent string
}

func newRecorder(t *testing.T, statuses ...int) *recorder {
	rec := &recorder{statuses: statuses}
	rec.Server = httptest.NewServer(http.HandlerFunc(rec.serve))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.requests = append(rec.requests, recorded{
		method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, key: r.Header.Get("Idempotency-Key"),
		auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"), body: string(body),
		traceparent: r.Header.Get("traceparent"),
	})
	status := http.StatusOK
	if len(rec.statuses) > 0 {
		status, rec.statuses = rec.statuses[0], rec.statuses[1:]
	}
	rec.mu.Unlock()
	if r.URL.Path == "/text" {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprint(w, "plain words")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Trace", "t1")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"path": %q, "n": 7}`, r.URL.Path)
}

func (rec *recorder) seen() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]recorded(nil), rec.requests...)
}

func httpWorkflow(h *harness, name, url, extra string) string {
	return h.define(fmt.Sprintf(`
name: %s
input: {type: object}
steps:
  - id: call
    http:
      url: "%s"
%s
    retry: {initialInterval: 1ms, maxInterval: 2ms}
`, name, url, extra))
}

func TestHTTPStep(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := newRecorder(t)
	name := httpWorkflow(h, "post", srv.URL+"/orders/${{ input.id }}", `
      query: {expand: "${{ input.expand }}"}
      headers: {X-Tenant: acme}
      body: {orderId: "${{ input.id }}"}`)
	r := h.run(e, name, `{"id": "o1", "expand": "lines"}`, runner.StatusCompleted)

	out := jsonOf(t, r.Output).(map[string]any)
	require.Equal(t, 200.0, out["status"])
	require.Equal(t, map[string]any{"path": "/orders/o1", "n": 7.0}, out["body"])
	require.Equal(t, "t1", out["headers"].(map[string]any)["x-trace"])

	reqs := srv.seen()
	require.Len(t, reqs, 1)
	require.Equal(t, recorded{
		method: http.MethodPost, path: "/orders/o1", query: "expand=lines", key: step(r, "call").StepID,
		contentType: "application/json", body: `{"orderId":"o1"}`,
	}, reqs[0])
}

func TestHTTPTextBodyAndNoKey(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := newRecorder(t)
	name := httpWorkflow(h, "text", srv.URL+"/text", `      idempotencyKey: false`)
	r := h.run(e, name, `{}`, runner.StatusCompleted)
	require.Equal(t, "plain words", jsonOf(t, r.Output).(map[string]any)["body"])
	reqs := srv.seen()
	require.Equal(t, http.MethodGet, reqs[0].method)
	require.Empty(t, reqs[0].key)
}

func TestHTTPRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		status   runner.Status
		attempts int
	}{
		{"5xx then ok", []int{503, 500}, runner.StatusCompleted, 3},
		{"429 then ok", []int{429}, runner.StatusCompleted, 2},
		{"5xx exhausts the default 3 attempts", []int{502, 502, 502}, runner.StatusFailed, 3},
		{"4xx is not retried", []int{404}, runner.StatusFailed, 1},
		{"422 is not retried", []int{422}, runner.StatusFailed, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			e := h.engine(runner.Config{})
			srv := newRecorder(t, tt.statuses...)
			r := h.run(e, httpWorkflow(h, "retry", srv.URL+"/x", ""), `{}`, tt.status)
			rec := step(r, "call")
			require.Equal(t, tt.attempts, rec.Attempts)
			reqs := srv.seen()
			require.Len(t, reqs, tt.attempts)
			for _, req := range reqs {
				require.Equal(t, rec.StepID, req.key, "the same Idempotency-Key on every attempt")
			}
			if tt.status == runner.StatusFailed {
				require.Equal(t, runner.CodeHTTP, r.Error.Code)
				require.Contains(t, r.Error.Message, fmt.Sprint(tt.statuses[len(tt.statuses)-1]))
			}
		})
	}
}

// bearer is runner.Credentials with one bearer token per connection, bound to hosts.
type bearer map[string]runner.Credential

func (b bearer) Credential(_ context.Context, connection string) (*runner.Credential, error) {
	c, ok := b[connection]
	if !ok {
		return nil, fmt.Errorf("no connection %q", connection)
	}
	return &c, nil
}

func bearerToken(token string, hosts ...string) runner.Credential {
	return runner.Credential{Hosts: hosts, Header: http.Header{"Authorization": {"Bearer " + token}}}
}

func TestHTTPConnection(t *testing.T) {
	h := newHarness(t)
	h.creds = bearer{"payments": bearerToken("s3cret", "127.0.0.1"), "legacy": bearerToken("old")}
	e := h.engine(runner.Config{})
	srv := newRecorder(t)
	ok := httpWorkflow(h, "signed", srv.URL, `      connection: payments`)
	h.run(e, ok, `{}`, runner.StatusCompleted)
	require.Equal(t, "Bearer s3cret", srv.seen()[0].auth)

	unknown := httpWorkflow(h, "unsigned", srv.URL, `      connection: nope`)
	r := h.run(e, unknown, `{}`, runner.StatusFailed)
	require.Equal(t, runner.CodeConnection, r.Error.Code)
	require.Equal(t, 1, step(r, "call").Attempts)
	require.Len(t, srv.seen(), 1)

	hostless := httpWorkflow(h, "hostless", srv.URL, `      connection: legacy`)
	r = h.run(e, hostless, `{}`, runner.StatusFailed)
	require.Equal(t, runner.CodeHostMismatch, r.Error.Code, "a connection bound to no host is sent nowhere")
	require.Contains(t, r.Error.Message, "its hosts: none")
	require.Len(t, srv.seen(), 1)
}

// hangingServer answers no request until its client gives up or the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	return srv
}

func TestHTTPTimeout(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := hangingServer(t)
	name := h.define(fmt.Sprintf(`
name: hang
input: {type: object}
steps:
  - {id: call, http: {url: "%s"}, timeout: 30ms, retry: {maxAttempts: 1}}
`, srv.URL))
	r := h.run(e, name, `{}`, runner.StatusFailed)
	require.Equal(t, runner.CodeTimeout, r.Error.Code)
}

// TestHTTPTimeoutCapped: a definition stored before schemas.MaxHTTPTimeout existed (the
// harness stores definitions unvalidated) may ask 10 years of a server that never answers;
// the attempt is cut at the cap, so the worker comes free. The cap is shortened here.
func TestHTTPTimeoutCapped(t *testing.T) {
	h := newHarness(t)
	cfg := runner.Config{}
	runner.SetMaxHTTPTimeout(&cfg, 50*time.Millisecond)
	e := h.engine(cfg)
	srv := hangingServer(t)
	name := h.define(fmt.Sprintf(`
name: slowloris
input: {type: object}
steps:
  - {id: call, http: {url: "%s"}, timeout: %s, retry: {maxAttempts: 1}}
`, srv.URL, schemas.MaxDuration))
	r := h.run(e, name, `{}`, runner.StatusFailed)
	require.Equal(t, runner.CodeTimeout, r.Error.Code)
	require.Contains(t, r.Error.Message, "no answer within 50ms")
}

// TestHTTPAttemptTimeout: the timeout one http attempt gets from what its step asks.
func TestHTTPAttemptTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		asked, want time.Duration
	}{
		{0, 30 * time.Second},
		{time.Minute, time.Minute},
		{schemas.MaxHTTPTimeout, schemas.MaxHTTPTimeout},
		{schemas.MaxHTTPTimeout + time.Nanosecond, schemas.MaxHTTPTimeout},
		{schemas.MaxDuration, schemas.MaxHTTPTimeout},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, runner.HTTPTimeout(tt.asked, schemas.MaxHTTPTimeout), "asked %s", tt.asked)
	}
}

func TestHTTPOutputIsJSON(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := newRecorder(t)
	name := h.define(fmt.Sprintf(`
name: chain
input: {type: object}
steps:
  - {id: call, http: {url: "%s/a"}}
  - {id: use, set: "${{ steps.call.output.body.n + 1 }}"}
`, srv.URL))
	r := h.run(e, name, `{}`, runner.StatusCompleted)
	var n json.Number
	require.NoError(t, json.Unmarshal(r.Output, &n))
	require.Equal(t, "8", n.String())
}

// TestHTTPDeepBody: a server answers JSON nested 10,000 deep, as deep as encoding/json
// decodes. Before, the step's record was deeper than that, the run could not be saved and
// stayed running; now a body deeper than expression.MaxValueDepth is kept as text, as one
// that is not JSON, and one at the limit is still decoded (a bracket in a string counts
// for nothing).
func TestHTTPDeepBody(t *testing.T) {
	nested := func(n int) string { return strings.Repeat("[", n) + `"]]["` + strings.Repeat("]", n) }
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		require.NoError(t, err)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, nested(n))
	}))
	t.Cleanup(srv.Close)

	r := h.run(e, httpWorkflow(h, "deep", srv.URL+"/?n=10000", ""), `{}`, runner.StatusCompleted)
	require.Equal(t, nested(10_000), jsonOf(t, r.Output).(map[string]any)["body"])

	r = h.run(e, httpWorkflow(h, "limit", srv.URL+fmt.Sprintf("/?n=%d", expression.MaxValueDepth), ""), `{}`, runner.StatusCompleted)
	body := jsonOf(t, r.Output).(map[string]any)["body"]
	for range expression.MaxValueDepth - 1 {
		body = body.([]any)[0]
	}
	require.Equal(t, []any{"]]["}, body)
}

// TestNestsDeeper: brackets count only outside strings, where an escaped quote does not
// end one, and closing ones bring the depth back down.
func TestNestsDeeper(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		want bool
	}{
		{`[[]]`, false},
		{`[[[]]]`, true},
		{`[[],[],[]]`, false},
		{`{"a":{"b":1}}`, false},
		{`{"a":{"b":[1]}}`, true},
		{`["[[[", "{{{"]`, false},
		{`["\"[[[", 1]`, false},
		{`["\\", [[1]]]`, true},
		{`"\\\"[[["`, false},
		{strings.Repeat("[", 10<<20), true},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, runner.NestsDeeper([]byte(tt.body), 2), "%.40s", tt.body)
	}
}
