package runnertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// The steps' outputs, and the commits made before measuring, in BenchStepCommit.
const (
	stepOutputSize = 10 * 1024
	warmUp         = 10
)

// BenchStepCommit measures what committing one step costs in a run of 10 steps and in a run
// of 1,000 steps, each step with a 10 KB output, interleaved in the same loop so that both
// see the same machine; it reports both and their ratio, which must stay near 1: a commit
// writes the step that changed, not the run's whole step list.
func BenchStepCommit(b *testing.B, newStore func(b *testing.B) runner.Store) {
	ctx := context.Background()
	setup := func(id string, n int) (runner.Store, runner.Claimed) {
		s := newStore(b)
		r := withSteps(NewRun(id, 0, 0), n, stepOutputSize)
		require.NoError(b, Create(ctx, s, r, nil))
		claimed, err := s.ClaimRuns(ctx, runner.ClaimRunsParams{Owner: "bench", Now: base, LeaseUntil: base.Add(time.Hour), Limit: 1})
		require.NoError(b, err)
		require.Len(b, claimed, 1)
		return s, claimed[0]
	}
	commit := func(s runner.Store, c runner.Claimed, i int) time.Duration {
		r := c.Run
		last := len(r.Steps) - 1
		r.Steps[last].Attempts = i
		start := time.Now()
		require.NoError(b, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{Steps: []int{last}}))
		return time.Since(start)
	}
	smallStore, small := setup("small", 10)
	largeStore, large := setup("large", 1000)
	// A few commits first, so that what creating the run left to do (SQLite checkpoints the
	// 10 MB it wrote to its log on the next commit) is not counted as a step's commit.
	for i := range warmUp {
		commit(smallStore, small, i)
		commit(largeStore, large, i)
	}
	var atSmall, atLarge time.Duration
	for i := 0; b.Loop(); i++ {
		atSmall += commit(smallStore, small, i)
		atLarge += commit(largeStore, large, i)
	}
	perSmall := float64(atSmall.Nanoseconds()) / float64(b.N)
	perLarge := float64(atLarge.Nanoseconds()) / float64(b.N)
	b.ReportMetric(perSmall, "ns/commit@10")
	b.ReportMetric(perLarge, "ns/commit@1000")
	b.ReportMetric(perLarge/perSmall, "ratio")
}

// BenchRuns submits b.N runs of workflow (input {"n": 1}) through e from submitters
// goroutines, each submitting one run after another as a caller does, and reports runs/s
// from the first submit until every run completed. A run that settled in its admission is
// taken as its admission wrote it, as the MCP and webhook surfaces take it; the others are
// waited for once all are submitted.
func BenchRuns(b *testing.B, e *runner.Engine, workflow string, submitters int) {
	ctx := context.Background()
	results := make([]*runner.SubmitResult, b.N)
	var next atomic.Int64
	b.ResetTimer()
	start, cpu := time.Now(), processCPU()
	errs := make([]error, submitters)
	var wg sync.WaitGroup
	for w := range submitters {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(b.N) && errs[w] == nil; i = next.Add(1) - 1 {
				results[i], errs[w] = e.Submit(ctx, runner.SubmitParams{Workflow: workflow, Input: json.RawMessage(`{"n": 1}`)})
			}
		})
	}
	wg.Wait()
	require.NoError(b, errors.Join(errs...))
	for _, res := range results {
		r := res.Written
		if !r.Status.Settled() {
			var err error
			r, err = e.Wait(ctx, res.Run.ID, time.Minute)
			require.NoError(b, err)
		}
		require.Equal(b, runner.StatusCompleted, r.Status)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	if cpu > 0 {
		b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// BenchListRuns measures one list page over 10,000 runs, 1 in 100 of them completed and the
// rest failed, newest first: unfiltered (100 runs, the index alone answers), by status
// failed (served by an index on both stores), and by status completed (SQLite walks all
// runs for it; Redis has an index), and by environment, which no index serves: its pages
// examine up to limits.MaxRunsExamined runs each.
func BenchListRuns(b *testing.B, newStore func(b *testing.B) runner.Store) {
	ctx := context.Background()
	s := newStore(b)
	for i := range 10_000 {
		r := Ended(NewRun(fmt.Sprintf("run-%05d", i), time.Duration(i)*time.Second, -1), runner.StatusFailed, time.Duration(i+1)*time.Second)
		if i%100 == 0 {
			r.Status = runner.StatusCompleted
		}
		require.NoError(b, Create(ctx, s, r, nil))
	}
	for _, tc := range []struct {
		name string
		p    runner.ListRunsParams
	}{
		{"all", runner.ListRunsParams{}},
		{"status=failed", runner.ListRunsParams{Status: runner.StatusFailed}},
		{"status=completed", runner.ListRunsParams{Status: runner.StatusCompleted}},
		{"environment=test", runner.ListRunsParams{Environment: runner.EnvTest}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tc.p.Limit = 100
			for b.Loop() {
				if _, _, err := s.ListRuns(ctx, tc.p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
