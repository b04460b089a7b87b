package runner_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestHTTPAttemptHistory: every attempt of an http step is kept with its error, its times,
// its request line and the status answered, not only the last; its evaluated definition is
// kept with header values redacted, and a connection's secret is in neither.
func TestHTTPAttemptHistory(t *testing.T) {
	h := newHarness(t)
	h.creds = bearer{"payments": bearerToken("s3cret-token", "127.0.0.1")}
	e := h.engine(runner.Config{})
	srv := newRecorder(t, 503, 502, 500)
	name := httpWorkflow(h, "flaky", srv.URL+"/charge/${{ input.id }}", `      connection: payments
      headers: {Authorization: "Bearer ${{ input.key }}", X-Tenant: acme}`)
	r := h.run(e, name, `{"id": "o7", "key": "typed-secret"}`, runner.StatusFailed)
	rec := step(r, "call")
	require.Len(t, rec.History, 3)
	for i, a := range rec.History {
		require.Equal(t, i+1, a.N)
		require.Equal(t, "GET "+srv.URL+"/charge/o7", a.Request)
		require.Equal(t, []int{503, 502, 500}[i], a.Status)
		require.NotNil(t, a.Error)
		require.Equal(t, runner.CodeHTTP, a.Error.Code)
		require.False(t, a.StartedAt.IsZero())
		require.False(t, a.FinishedAt.Before(a.StartedAt))
	}
	require.JSONEq(t, fmt.Sprintf(`{"url": %q, "connection": "payments", "headers": {"Authorization": %q, "X-Tenant": %q}}`,
		srv.URL+"/charge/o7", runner.Redacted, runner.Redacted), string(rec.Input))
	whole, err := json.Marshal(r.Steps)
	require.NoError(t, err)
	require.NotContains(t, string(whole), "s3cret-token")
	require.NotContains(t, string(whole), "typed-secret")
}

// TestAttemptHistoryBounds: a step keeps its latest runner.MaxAttemptHistory attempts and
// no history when it completed on its one attempt; its input is bounded.
func TestAttemptHistoryBounds(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	statuses := make([]int, runner.MaxAttemptHistory+1) // one past the bound, then 200
	for i := range statuses {
		statuses[i] = 503
	}
	srv := newRecorder(t, statuses...)
	name := h.define(fmt.Sprintf(`
name: many
input: {type: object}
steps:
  - id: call
    http: {url: "%s/x"}
    retry: {maxAttempts: %d, initialInterval: 1ms, maxInterval: 1ms}
`, srv.URL, runner.MaxAttemptHistory+2))
	r := h.run(e, name, `{}`, runner.StatusCompleted)
	rec := step(r, "call")
	require.Equal(t, runner.MaxAttemptHistory+2, rec.Attempts)
	require.Len(t, rec.History, runner.MaxAttemptHistory)
	require.Equal(t, 3, rec.History[0].N, "the oldest attempts go first")
	last := rec.History[len(rec.History)-1]
	require.Nil(t, last.Error)
	require.Equal(t, 200, last.Status)

	once := h.run(e, httpWorkflow(h, "once", srv.URL+"/"+strings.Repeat("p", runner.MaxRecordedInput), ""), `{}`, runner.StatusCompleted)
	require.Len(t, step(once, "call").History, 1, "an http attempt tells its request")
	var cut struct {
		Truncated bool
		Bytes     int
	}
	require.NoError(t, json.Unmarshal(step(once, "call").Input, &cut))
	require.True(t, cut.Truncated)
	require.Greater(t, cut.Bytes, runner.MaxRecordedInput)
}
