package idempotency_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// step is one request of a rules case and what it must get.
type step struct {
	advance time.Duration // moves the clock before the request
	call
	wantStatus     int
	wantReplayed   bool
	wantBody       string // when set, the exact body
	wantCalls      int64  // app calls so far
	wantRetryAfter string
}

// TestMiddlewareRules has one case per rule of SPEC §4 (rules 6 and 9 have their own
// tests: they need a blocked handler and a failing store).
func TestMiddlewareRules(t *testing.T) {
	t.Parallel()
	const run = "/api/workflows/w/run?environment=production"
	tests := []struct {
		name  string
		tune  func(*idempotency.Config)
		steps []step
	}{
		{name: "1 empty key refused, nothing done", steps: []step{
			{call: call{key: ""}, wantStatus: 400, wantCalls: 0},
		}},
		{name: "1 key over 255 characters refused", steps: []step{
			{call: call{key: strings.Repeat("k", 256)}, wantStatus: 400, wantCalls: 0},
		}},
		{name: "1 key of 255 characters accepted", steps: []step{
			{call: call{key: strings.Repeat("é", 255)}, wantStatus: 201, wantCalls: 1},
			{call: call{key: strings.Repeat("é", 255)}, wantStatus: 201, wantReplayed: true, wantCalls: 1},
		}},
		{name: "2 keys belong to the principal", steps: []step{
			{call: call{key: "k", principal: "alice"}, wantStatus: 201, wantBody: `{"call":1}`, wantCalls: 1},
			{call: call{key: "k", principal: "bob"}, wantStatus: 201, wantBody: `{"call":2}`, wantCalls: 2},
			{call: call{key: "k", principal: "alice"}, wantStatus: 201, wantReplayed: true, wantBody: `{"call":1}`, wantCalls: 2},
		}},
		{name: "3 a 2xx answer is kept 24h", steps: []step{
			{call: call{key: "k"}, wantStatus: 201, wantCalls: 1},
			{advance: 24*time.Hour - time.Nanosecond, call: call{key: "k"}, wantStatus: 201, wantReplayed: true, wantCalls: 1},
			{advance: time.Nanosecond, call: call{key: "k"}, wantStatus: 201, wantBody: `{"call":2}`, wantCalls: 2},
		}},
		{name: "3 a 4xx answer is not kept", steps: []step{
			{call: call{key: "k", status: 400}, wantStatus: 400, wantCalls: 1},
			{call: call{key: "k"}, wantStatus: 201, wantCalls: 2},
		}},
		{name: "3 a 5xx answer is not kept", steps: []step{
			{call: call{key: "k", status: 503}, wantStatus: 503, wantCalls: 1},
			{call: call{key: "k"}, wantStatus: 201, wantCalls: 2},
		}},
		{name: "4 replay gives the kept answer", steps: []step{
			{call: call{key: "k", body: `{"a":1}`}, wantStatus: 201, wantBody: `{"call":1}`, wantCalls: 1},
			{call: call{key: "k", body: `{"a":1}`}, wantStatus: 201, wantReplayed: true, wantBody: `{"call":1}`, wantCalls: 1},
		}},
		{name: "5 another body", steps: []step{
			{call: call{key: "k", body: `{"a":1,"b":"x"}`}, wantStatus: 201, wantCalls: 1},
			{call: call{key: "k", body: `{"a":2,"b":"x"}`}, wantStatus: 422, wantCalls: 1},
			{call: call{key: "k", body: "{ \"b\": \"x\",\n \"a\": 1.0 }"}, wantStatus: 201, wantReplayed: true, wantCalls: 1},
		}},
		{name: "5 another environment", steps: []step{
			{call: call{key: "k", target: run}, wantStatus: 201, wantCalls: 1},
			{call: call{key: "k", target: "/api/workflows/w/run?environment=test"}, wantStatus: 422, wantCalls: 1},
		}},
		{name: "5 another path", steps: []step{
			{call: call{key: "k", target: run}, wantStatus: 201, wantCalls: 1},
			{call: call{key: "k", target: "/api/workflows/v/run?environment=production"}, wantStatus: 422, wantCalls: 1},
		}},
		{name: "7 a new key past the cap is refused; a kept key replays", tune: maxKeys(2), steps: []step{
			{call: call{key: "k1"}, wantStatus: 201, wantCalls: 1},
			{advance: time.Hour, call: call{key: "k2"}, wantStatus: 201, wantCalls: 2},
			{advance: 30 * time.Minute, call: call{key: "k3"}, wantStatus: 429, wantRetryAfter: "81000", wantCalls: 2},
			{call: call{key: "k1"}, wantStatus: 201, wantReplayed: true, wantCalls: 2},
			{advance: 22*time.Hour + 30*time.Minute, call: call{key: "k3"}, wantStatus: 201, wantCalls: 3},
		}},
		{name: "8 an answer over 64 KiB is not kept but the key stays taken", steps: []step{
			{call: call{key: "k", size: 64<<10 + 1}, wantStatus: 201, wantCalls: 1},
			{call: call{key: "k", size: 64<<10 + 1}, wantStatus: 409, wantCalls: 1},
			{advance: 24 * time.Hour, call: call{key: "k"}, wantStatus: 201, wantCalls: 2},
		}},
		{name: "8 an answer of 64 KiB is kept", steps: []step{
			{call: call{key: "k", size: 64 << 10}, wantStatus: 201, wantCalls: 1},
			{call: call{key: "k", size: 64 << 10}, wantStatus: 201, wantReplayed: true, wantCalls: 1},
		}},
		{name: "10 webhook keys belong to the workflow", steps: []step{
			{call: call{key: "k", target: "/webhooks/wf1", principal: "alice"}, wantStatus: 201, wantCalls: 1},
			{call: call{key: "k", target: "/webhooks/wf1", principal: "bob"}, wantStatus: 201, wantReplayed: true, wantCalls: 1},
			{call: call{key: "k", target: "/webhooks/wf2"}, wantStatus: 201, wantCalls: 2},
		}},
		{name: "10 webhooks keep failed answers", steps: []step{
			{call: call{key: "k", target: "/webhooks/wf1", status: 500}, wantStatus: 500, wantCalls: 1},
			{call: call{key: "k", target: "/webhooks/wf1", status: 500}, wantStatus: 500, wantReplayed: true, wantCalls: 1},
		}},
		{name: "10 webhooks evict the oldest key instead of refusing", tune: maxKeys(2), steps: []step{
			{call: call{key: "k1", target: "/webhooks/wf1"}, wantStatus: 201, wantCalls: 1},
			{advance: time.Second, call: call{key: "k2", target: "/webhooks/wf1"}, wantStatus: 201, wantCalls: 2},
			{advance: time.Second, call: call{key: "k3", target: "/webhooks/wf1"}, wantStatus: 201, wantCalls: 3},
			{call: call{key: "k3", target: "/webhooks/wf1"}, wantStatus: 201, wantReplayed: true, wantCalls: 3},
			{call: call{key: "k1", target: "/webhooks/wf1"}, wantStatus: 201, wantCalls: 4},
		}},
		{name: "ignored on GET, PUT and DELETE", steps: []step{
			{call: call{key: "k", method: http.MethodGet}, wantStatus: 201, wantCalls: 1},
			{call: call{key: "k", method: http.MethodGet}, wantStatus: 201, wantCalls: 2},
			{call: call{key: "k", method: http.MethodPut}, wantStatus: 201, wantCalls: 3},
			{call: call{key: "", method: http.MethodDelete}, wantStatus: 201, wantCalls: 4},
		}},
		{name: "POST without a key goes through", steps: []step{
			{call: call{noKey: true}, wantStatus: 201, wantCalls: 1},
			{call: call{noKey: true}, wantStatus: 201, wantCalls: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, tt.tune)
			a := &app{}
			srv := h.handler(a)
			for i, s := range tt.steps {
				h.clock.Advance(s.advance)
				if s.principal == "" {
					s.principal = "alice"
				}
				w := s.serve(srv)
				require.Equal(t, s.wantStatus, w.Code, "step %d: %s", i, w.Body)
				require.Equal(t, s.wantCalls, a.calls.Load(), "step %d", i)
				require.Equal(t, s.wantRetryAfter, w.Header().Get("Retry-After"), "step %d", i)
				checkAnswer(t, s, w.Result())
			}
		})
	}
}

func maxKeys(n int) func(*idempotency.Config) {
	return func(c *idempotency.Config) { c.MaxKeys = n }
}

// checkAnswer checks what an app answer carries: a replay has the kept headers only, a
// first answer all of them and its full body.
func checkAnswer(t *testing.T, s step, resp *http.Response) {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if s.wantBody != "" {
		require.Equal(t, s.wantBody, string(body))
	}
	if s.size > 0 && !s.wantReplayed && s.wantStatus == 201 {
		require.Len(t, body, s.size)
	}
	if s.wantReplayed {
		require.Equal(t, "true", resp.Header.Get(idempotency.HeaderReplayed))
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.NotEmpty(t, resp.Header.Get("Location"))
		require.Empty(t, resp.Header.Get("X-Not-Kept"))
		return
	}
	require.Empty(t, resp.Header.Get(idempotency.HeaderReplayed))
	if resp.StatusCode == s.status || (s.status == 0 && resp.StatusCode == 201) {
		require.Equal(t, "1", resp.Header.Get("X-Not-Kept"))
	}
}

func TestMiddlewareBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil)
	var seen []string
	echo := h.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		seen = append(seen, string(b))
		w.WriteHeader(http.StatusAccepted)
	}))
	limited := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 8)
		echo.ServeHTTP(w, r)
	})

	w := call{key: "k", principal: "alice", body: `{"a":1}`}.serve(limited)
	require.Equal(t, http.StatusAccepted, w.Code)
	require.Equal(t, []string{`{"a":1}`}, seen, "the handler reads the body the middleware read")

	w = call{key: "k2", principal: "alice", body: `{"a":"too long"}`}.serve(limited)
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.Len(t, seen, 1, "nothing done")
}
