package runner_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// BenchmarkEngine3StepSet measures runs of a 3-step set workflow, from Submit to completed,
// on the SQLite store; runs/s is the throughput with every run in flight at once.
func BenchmarkEngine3StepSet(b *testing.B) {
	h := newHarness(b)
	e := h.engine(runner.Config{})
	name := h.define(`
name: bench
input: {type: object}
steps:
  - {id: a, set: {n: "${{ input.n }}"}}
  - {id: b, set: "${{ steps.a.output.n + 1 }}"}
  - {id: c, set: {done: "${{ steps.b.output }}"}}
`)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	ids := make([]string, b.N)
	for i := range b.N {
		res, err := e.Submit(ctx, runner.SubmitParams{Workflow: name, Input: json.RawMessage(`{"n": 1}`)})
		require.NoError(b, err)
		ids[i] = res.Run.ID
	}
	for _, id := range ids {
		r, err := e.Wait(ctx, id, time.Minute)
		require.NoError(b, err)
		require.Equal(b, runner.StatusCompleted, r.Status)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}
