package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// sweepBacklog is how many ended runs past their retention each round of
// BenchmarkSweepImpact gives the sweeper to delete.
const sweepBacklog = 5000

// BenchmarkSweepImpact measures issue #30's goal on each backend: the p50 of MCP tools/call
// of the bench workflow while the retention sweeper deletes a backlog of sweepBacklog ended
// runs, against the p50 of as many calls with no sweep, made right after on the same store
// (each iteration is one round of both; run it with -benchtime Nx). It reports
// quiet-p50-µs, sweep-p50-µs, ratio (sweep ÷ quiet) and the calls measured during sweeps.
func BenchmarkSweepImpact(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) { benchSweepImpact(b, be.open(b)) })
	}
}

func benchSweepImpact(b *testing.B, st benchStore) {
	ctx := context.Background()
	session := toolsSession(b, st)
	sw, err := runner.NewSweeper(st, runner.SweeperConfig{Retention: time.Hour})
	require.NoError(b, err)
	for range 50 {
		callBench(b, session) // warm up
	}
	var quiet, swept []time.Duration
	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		fillEnded(b, st, round)
		b.StartTimer()
		done := make(chan error, 1)
		go func() {
			n, err := sw.Sweep(ctx)
			if err == nil && n != sweepBacklog {
				err = fmt.Errorf("swept %d runs of %d", n, sweepBacklog)
			}
			done <- err
		}()
		during := timedUntil(b, session, done)
		swept = append(swept, during...)
		for range during {
			quiet = append(quiet, timedCall(b, session))
		}
	}
	q, s := p50(quiet), p50(swept)
	b.ReportMetric(float64(q.Microseconds()), "quiet-p50-µs")
	b.ReportMetric(float64(s.Microseconds()), "sweep-p50-µs")
	b.ReportMetric(float64(s)/float64(q), "ratio")
	b.ReportMetric(float64(len(swept)), "calls-swept")
}

// timedUntil makes calls one after another until done answers (its error fails b), and
// answers how long each took.
func timedUntil(b *testing.B, session *mcp.ClientSession, done <-chan error) []time.Duration {
	var took []time.Duration
	for {
		select {
		case err := <-done:
			require.NoError(b, err)
			return took
		default:
			took = append(took, timedCall(b, session))
		}
	}
}

func timedCall(b *testing.B, session *mcp.ClientSession) time.Duration {
	start := time.Now()
	callBench(b, session)
	return time.Since(start)
}

func p50(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// fillEnded writes sweepBacklog completed runs of the bench workflow that ended two hours
// ago, from 8 goroutines, as admissions of runs already ended write them.
func fillEnded(b *testing.B, st benchStore, round int) {
	ctx := context.Background()
	ended := time.Now().Add(-2 * time.Hour).UTC()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < sweepBacklog; i += 8 {
				r := &runner.Run{ID: fmt.Sprintf("old-%d-%05d", round, i), WorkflowID: "old", Workflow: "old", Version: 1,
					Environment: "production", Status: runner.StatusCompleted, Input: json.RawMessage(`{"n":1}`),
					Output: json.RawMessage(`{"done":2}`), CreatedAt: ended, StartedAt: &ended, FinishedAt: &ended}
				if err := runnertest.Create(ctx, st, r, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)
}
