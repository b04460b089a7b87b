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
	claims, err := s.ClaimRuns(polled, runner.ClaimRunsParams{Owner: "me", Now: now, LeaseUntil: now.Add(time.Minute), Limit: 8})
	require.NoError(t, err, "a poll with nothing due does not wait for the committer")
	require.Empty(t, claims)

	claimed := make(chan []runner.Claimed, 1)
	go func() {
		claims, err := s.ClaimRuns(ctx, runner.ClaimRunsParams{Owner: "me", Now: now.Add(2 * time.Hour), LeaseUntil: now.Add(3 * time.Hour), Limit: 8})
		if err == nil {
			claimed <- claims
		}
		close(claimed)
	}()
	require.NoError(t, release())
	claims = <-claimed
	require.Len(t, claims, 1)
	require.Equal(t, "later", claims[0].Run.ID)
}
