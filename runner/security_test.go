package runner_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// TestSecurityExpressionLimit runs issue #10's attack through the real engine: the step
// fails with EXPRESSION_LIMIT naming the step and the expression, the process allocates
// tens of MB at most instead of dying in strings.Repeat, and the engine keeps serving
// another run. Not parallel: it reads the process's allocation counters.
func TestSecurityExpressionLimit(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	attack := h.define(`
name: attack
input: {type: object}
steps:
  - id: boom
    set: "${{ len(repeat(repeat('a', 1000000), input.n)) }}"
  - {id: never, set: 1}
`)
	fine := h.define(`
name: fine
input: {type: object}
steps:
  - id: greet
    set: "hello ${{ input.who }}"
`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	attackRun := h.submit(e, attack, `{"n": 1000000}`)
	fineRun := h.submit(e, fine, `{"who": "world"}`)
	r := h.await(e, attackRun.ID, runner.StatusFailed)
	runtime.ReadMemStats(&after)

	require.Equal(t, runner.CodeExpressionLimit, r.Error.Code)
	require.Equal(t, "boom", r.Error.Step)
	require.Contains(t, r.Error.Message, `step "boom"`)
	require.Contains(t, r.Error.Message, "repeat(repeat('a', 1000000), input.n)")
	require.Equal(t, runner.StepSkipped, step(r, "never").Status)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20))

	ok := h.await(e, fineRun.ID, runner.StatusCompleted)
	require.Equal(t, "hello world", jsonOf(t, ok.Output))
	again := h.run(e, fine, `{"who": "again"}`, runner.StatusCompleted)
	require.Equal(t, "hello again", jsonOf(t, again.Output))
}

// TestSecurityComputedDurations: an until computed at run time beyond MaxDuration fails the
// step with INVALID_DURATION (issue #10 item 4) instead of storing a wake-up time that
// overflows; an until in the past ends the sleep at once.
func TestSecurityComputedDurations(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	name := h.define(`
name: sleeper
input: {type: object}
steps:
  - id: nap
    sleep: {until: "${{ input.until }}"}
`)
	for _, until := range []string{"9999-12-31T23:59:59Z", "2300-01-01T00:00:00Z"} {
		r := h.run(e, name, `{"until": "`+until+`"}`, runner.StatusFailed)
		require.Equal(t, runner.CodeInvalidDuration, r.Error.Code)
		require.Equal(t, "nap", r.Error.Step)
		require.Contains(t, r.Error.Message, "10 years")
	}
	h.run(e, name, `{"until": "0001-01-01T00:00:00Z"}`, runner.StatusCompleted)
}

// TestSecurityRetryAfterBounded: a server asking to be retried in 3,000 years gets at most
// schemas.MaxDuration; the stored wake-up time does not overflow and the run still cancels.
func TestSecurityRetryAfterBounded(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "99999999999")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	r := h.submit(e, httpWorkflow(h, "later", srv.URL, ""), `{}`)
	var stored *runner.Run
	require.Eventually(t, func() bool {
		var err error
		stored, err = h.store.GetRun(context.Background(), r.ID)
		require.NoError(t, err)
		return len(stored.Steps) > 0 && stored.Steps[0].Attempts == 1 && !stored.WakeAt.IsZero() && stored.WakeAt.After(time.Now().Add(time.Hour))
	}, 10*time.Second, time.Millisecond)
	require.False(t, stored.WakeAt.After(time.Now().Add(schemas.MaxDuration)))
	cancelled, err := e.Cancel(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, cancelled.Status)
}
