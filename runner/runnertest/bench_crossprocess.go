package runnertest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// BenchWaitLatency measures how long after a run's final save commits on process A a Wait
// for it on process B returns, one run at a time (B admits, A works): reported as p50-ms
// and p99-ms. open returns two processes sharing one fresh store.
func BenchWaitLatency(b *testing.B, open func(tb testing.TB) (a, b Process)) {
	pa, pb := open(b)
	flows := oneWorkflow(b)
	saves := &finalSaves{Store: pa.Store, at: map[string]time.Time{}}
	crossEngine(b, Process{Store: saves, Events: pa.Events}, flows, runner.Config{}, true)
	waiter, _ := crossEngine(b, pb, flows, runner.Config{}, false)
	ctx := context.Background()
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		res, err := waiter.Submit(ctx, runner.SubmitParams{Workflow: "one", Input: json.RawMessage(`{}`)})
		require.NoError(b, err)
		r, err := waiter.Wait(ctx, res.Run.ID, time.Minute)
		answered := time.Now()
		require.NoError(b, err)
		require.Equal(b, runner.StatusCompleted, r.Status)
		took = append(took, answered.Sub(saves.of(r.ID)))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// finalSaves is a store that notes when each run's final save returned.
type finalSaves struct {
	runner.Store
	mu sync.Mutex
	at map[string]time.Time
}

func (f *finalSaves) SaveRun(ctx context.Context, lease runner.Lease, r *runner.Run, opts runner.SaveOptions) error {
	err := f.Store.SaveRun(ctx, lease, r, opts)
	if err == nil && r.Status.Terminal() {
		f.mu.Lock()
		f.at[r.ID] = time.Now()
		f.mu.Unlock()
	}
	return err
}

func (f *finalSaves) of(id string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at[id]
}
