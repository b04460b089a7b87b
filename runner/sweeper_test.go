package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// value is a counter's or a gauge's value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

// admitEnded writes n runs of workflow wf ended at end, each with one step, at once.
func admitEnded(t *testing.T, s runner.Store, wf, prefix string, n int, end time.Time) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%05d", prefix, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &runner.Run{ID: ids[i], WorkflowID: wf, Workflow: wf, Version: 1, Environment: runner.EnvProduction,
				Status: runner.StatusCompleted, Input: json.RawMessage(`{}`), CreatedAt: end.Add(-time.Second),
				StartedAt: &end, FinishedAt: &end,
				Steps: []*runner.StepRecord{{ID: "a", StepID: "a", Status: runner.StepCompleted, Attempts: 1,
					Output: json.RawMessage(`{"n":1}`), StartedAt: &end, FinishedAt: &end}}}
			errs <- runnertest.Create(context.Background(), s, r, nil)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return ids
}

// admitWaiting writes a run of wf waiting on a hook of its own, created at at.
func admitWaiting(t *testing.T, s runner.Store, wf, id string, at time.Time) {
	t.Helper()
	r := &runner.Run{ID: id, WorkflowID: wf, Workflow: wf, Version: 1, Environment: runner.EnvProduction,
		Status: runner.StatusWaiting, Input: json.RawMessage(`{}`), CreatedAt: at}
	require.NoError(t, runnertest.Create(context.Background(), s, r,
		&runner.Hook{Environment: runner.EnvProduction, Token: id, RunID: id, CreatedAt: at}))
}

func requireGone(t *testing.T, s runner.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, err := s.GetRun(context.Background(), id)
		require.ErrorIs(t, err, runner.ErrNotFound, id)
	}
}

func TestSweeperRetention(t *testing.T) {
	h := newHarness(t)
	start := h.clock.Now()
	old := admitEnded(t, h.store, "wf", "old", 1000, start)
	kept := admitEnded(t, h.store, "wf", "new", 1000, start.Add(time.Hour))
	admitWaiting(t, h.store, "wf", "waiting", start.Add(-48*time.Hour))

	reg := prometheus.NewRegistry()
	w, err := runner.NewSweeper(h.store, runner.SweeperConfig{Retention: 90 * time.Minute, Now: h.clock.Now,
		Registerer: reg, Size: func(context.Context) (int64, error) { return 1234, nil }})
	require.NoError(t, err)
	n, err := w.Sweep(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "nothing is past its retention yet")

	h.clock.Advance(2 * time.Hour)
	n, err = w.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, len(old), n)
	requireGone(t, h.store, old...)
	for _, id := range kept {
		r, err := h.store.GetRun(context.Background(), id)
		require.NoError(t, err)
		require.Len(t, r.Steps, 1, "a kept run keeps its steps")
		require.JSONEq(t, `{"n":1}`, string(r.Steps[0].Output))
	}
	hk, err := h.store.GetHook(context.Background(), runner.EnvProduction, "waiting")
	require.NoError(t, err, "an active run is never deleted, nor its hook")
	require.Equal(t, "waiting", hk.RunID)
	require.Equal(t, float64(len(old)), value(t, w.DeletedCounter()))
	require.Equal(t, float64(1234), value(t, w.SizeGauge()))
}

func TestSweeperShorterRetention(t *testing.T) {
	h := newHarness(t)
	start := h.clock.Now()
	short := admitEnded(t, h.store, "short", "short", 20, start)
	long := admitEnded(t, h.store, "long", "long", 20, start)
	w, err := runner.NewSweeper(h.store, runner.SweeperConfig{Retention: 24 * time.Hour, Now: h.clock.Now,
		Shorter: func(context.Context) (map[string]time.Duration, error) {
			return map[string]time.Duration{"short": time.Minute, "long": 48 * time.Hour}, nil
		}})
	require.NoError(t, err)
	h.clock.Advance(2 * time.Minute)
	n, err := w.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, len(short), n, "a definition's retention shortens its runs' only")
	requireGone(t, h.store, short...)
	_, err = h.store.GetRun(context.Background(), long[0])
	require.NoError(t, err, "a longer one does not lengthen the server's, nor shorten the rest")
}

func TestSweeperForever(t *testing.T) {
	h := newHarness(t)
	ids := admitEnded(t, h.store, "wf", "run", 3, h.clock.Now())
	w, err := runner.NewSweeper(h.store, runner.SweeperConfig{Now: h.clock.Now})
	require.NoError(t, err)
	h.clock.Advance(10 * 365 * 24 * time.Hour)
	n, err := w.Sweep(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "retention 0 keeps every run")
	_, err = h.store.GetRun(context.Background(), ids[0])
	require.NoError(t, err)
}

func TestSweeperStartStop(t *testing.T) {
	h := newHarness(t)
	ids := admitEnded(t, h.store, "wf", "run", 5, h.clock.Now())
	w, err := runner.NewSweeper(h.store, runner.SweeperConfig{Retention: time.Minute, Now: h.clock.Now,
		Interval: 10 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	require.Error(t, w.Start(context.Background()), "once")
	h.clock.Advance(2 * time.Minute)
	require.Eventually(t, func() bool {
		_, err := h.store.GetRun(context.Background(), ids[4])
		return err != nil
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, w.Stop(context.Background()))
	requireGone(t, h.store, ids...)
}

func TestEngineDeleteRun(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	ended := h.run(e, h.define(oneStep), `{}`, runner.StatusCompleted)
	admitWaiting(t, h.store, "wf", "waiting", h.clock.Now())
	require.ErrorIs(t, e.DeleteRun(context.Background(), "waiting"), runner.ErrRunActive)
	_, err := e.Get(context.Background(), ended.ID)
	require.NoError(t, err, "read once, the ended run is kept in memory")
	require.NoError(t, e.DeleteRun(context.Background(), ended.ID))
	_, err = e.Get(context.Background(), ended.ID)
	require.ErrorIs(t, err, runner.ErrNotFound, "the engine forgets the run it deleted")
	require.ErrorIs(t, e.DeleteRun(context.Background(), ended.ID), runner.ErrNotFound)
}

// batchedStore answers SweepEnded with its number of batches, each taking a second, and records
// when each began and what it asked for.
type batchedStore struct {
	runner.Store
	batches int
	began   []time.Time
	limits  []int
}

func (s *batchedStore) SweepEnded(_ context.Context, p runner.SweepParams) (runner.SweepResult, error) {
	s.began, s.limits = append(s.began, time.Now()), append(s.limits, p.Limit)
	time.Sleep(time.Second)
	if len(s.began) < s.batches {
		return runner.SweepResult{Deleted: p.Limit, Next: &runner.RunKey{ID: "next"}}, nil
	}
	return runner.SweepResult{Deleted: 1}, nil
}

// TestSweeperRestsBetweenBatches: a sweep's batches examine at most MaxSweepBatch runs and,
// after each, the sweeper rests four times as long as the batch took, so that a backlog
// shares the store with the hot path (issue #30).
func TestSweeperRestsBetweenBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &batchedStore{batches: 3}
		w, err := runner.NewSweeper(s, runner.SweeperConfig{Retention: time.Hour})
		require.NoError(t, err)
		start := time.Now()
		n, err := w.Sweep(context.Background())
		require.NoError(t, err)
		require.Len(t, s.began, 3)
		require.Equal(t, 2*s.limits[0]+1, n)
		for i, limit := range s.limits {
			require.Positive(t, limit)
			require.LessOrEqual(t, limit, runner.MaxSweepBatch)
			if i > 0 {
				require.Equal(t, 5*time.Second, s.began[i].Sub(s.began[i-1]), "a batch of 1 s, then a rest of 4 s")
			}
		}
		require.Equal(t, 11*time.Second, time.Since(start), "no rest after the last batch")
	})
}

// TestSweeperStopsResting: a sweep stopped while it rests ends at once with ctx's error.
func TestSweeperStopsResting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &batchedStore{batches: 3}
		w, err := runner.NewSweeper(s, runner.SweeperConfig{Retention: time.Hour})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = w.Sweep(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, s.began, 1)
	})
}
