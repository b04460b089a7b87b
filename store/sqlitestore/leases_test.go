package sqlitestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestPollWithNothingDueWrites: a claim that finds no due run is answered from a read,
// even while the committer is held by another write, and one that finds a due run writes
// (so waits its turn) and takes it.
func TestPollWithNothingDueWrites(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	now := time.Now()
	r := &runner.Run{ID: "later", WorkflowID: "w", Workflow: "w", Environment: runner.EnvProduction,
		Status: runner.StatusPending, CreatedAt: now, WakeAt: now.Add(time.Hour)}
	_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r})
	require.NoError(t, err)

	release := blockCommitter(t, s)
	polled, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	runs, err := s.ClaimRuns(polled, "me", now, now.Add(time.Minute), 8)
	require.NoError(t, err, "a poll with nothing due does not wait for the committer")
	require.Empty(t, runs)

	claimed := make(chan []*runner.Run, 1)
	go func() {
		runs, err := s.ClaimRuns(ctx, "me", now.Add(2*time.Hour), now.Add(3*time.Hour), 8)
		if err == nil {
			claimed <- runs
		}
		close(claimed)
	}()
	require.NoError(t, release())
	runs = <-claimed
	require.Len(t, runs, 1)
	require.Equal(t, "later", runs[0].ID)
}
