package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// TestClaimSkipsLockedRuns: a run another transaction holds locked (a claimer on another
// host mid-claim) is skipped, not waited for: the claim returns the other due run at once.
func TestClaimSkipsLockedRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, schema := pgtest.Open(t)
	now := time.Now().UTC()
	for i := range 2 {
		r := &runner.Run{ID: fmt.Sprintf("r%d", i), WorkflowID: "wf", Workflow: "wf", Environment: runner.EnvProduction,
			Status: runner.StatusPending, Input: json.RawMessage(`{}`), CreatedAt: now, WakeAt: now.Add(time.Duration(i) * time.Millisecond)}
		require.NoError(t, runnertest.Create(ctx, s, r, nil))
	}
	cfg := pgtest.Config(t, schema)
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM runs WHERE id = 'r0' FOR UPDATE`)
	require.NoError(t, err)

	quick, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	claimed, err := s.ClaimRuns(quick, runner.ClaimRunsParams{Owner: "A", Now: now.Add(time.Second), LeaseUntil: now.Add(time.Hour), Limit: 2})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, "r1", claimed[0].Run.ID)
}
