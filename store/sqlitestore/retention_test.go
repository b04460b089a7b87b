package sqlitestore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// writeEnded admits n runs ended at end, named prefix-i, each with an input of about 1 kB
// and one step, at once (they share commits).
func writeEnded(t testing.TB, s *sqlitestore.Store, prefix string, n int, end time.Time) {
	t.Helper()
	input := json.RawMessage(`{"blob":"` + strings.Repeat("x", 1000) + `"}`)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &runner.Run{ID: fmt.Sprintf("%s-%06d", prefix, i), WorkflowID: "wf", Workflow: "wf", Version: 1,
				Environment: runner.EnvProduction, Status: runner.StatusCompleted, Input: input,
				CreatedAt: end, StartedAt: &end, FinishedAt: &end,
				Steps: []*runner.StepRecord{{ID: "a", StepID: "a", Status: runner.StepCompleted, Attempts: 1,
					Output: json.RawMessage(`{"ok":true}`), StartedAt: &end, FinishedAt: &end}}}
			errs <- runnertest.Create(context.Background(), s, r, nil)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// sweep deletes every run ended at or before cut.
func sweep(t testing.TB, s *sqlitestore.Store, cut time.Time) int {
	t.Helper()
	total := 0
	p := runner.SweepParams{EndedBefore: cut, Limit: runner.MaxSweepBatch}
	for {
		res, err := s.SweepEnded(context.Background(), p)
		require.NoError(t, err)
		total += res.Deleted
		if res.Next == nil {
			return total
		}
		p.After = res.Next
	}
}

// TestSweepGivesSpaceBack: a new file is made with auto_vacuum incremental, so that
// deleting runs shrinks it, and new runs then reuse the space instead of growing it.
func TestSweepGivesSpaceBack(t *testing.T) {
	s := fresh(t)
	ctx := context.Background()
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	writeEnded(t, s, "kept", 200, base.Add(time.Hour))
	atKept, err := s.Size(ctx)
	require.NoError(t, err)
	writeEnded(t, s, "old", 2000, base)
	full, err := s.Size(ctx)
	require.NoError(t, err)
	require.Greater(t, full, 5*atKept)

	require.Equal(t, 2000, sweep(t, s, base.Add(time.Minute)))
	after, err := s.Size(ctx)
	require.NoError(t, err)
	require.Less(t, after, full/3, "the file shrank: %d bytes of %d", after, full)

	for round := range 3 { // a steady state: as many runs come as go
		writeEnded(t, s, fmt.Sprintf("churn%d", round), 2000, base)
		size, err := s.Size(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, float64(size), 1.2*float64(full), "round %d: the file does not grow", round)
		require.Equal(t, 2000, sweep(t, s, base.Add(time.Minute)))
	}
	mode, err := s.AutoVacuum(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, mode, "incremental")
}
