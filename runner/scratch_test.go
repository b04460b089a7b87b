package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

func TestScratchClaim(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	now := time.Now()
	r := &runner.Run{ID: "r1", Status: runner.StatusPending, Input: []byte(`{}`), Output: []byte("null"), CreatedAt: now, WakeAt: now, Definition: []byte(`{}`)}
	require.NoError(t, h.store.CreateRun(ctx, r, nil))
	got, err := h.store.ClaimRuns(ctx, "a", now, now.Add(30*time.Second), 5)
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = h.store.ClaimRuns(ctx, "a", now.Add(time.Second), now.Add(31*time.Second), 5)
	require.NoError(t, err)
	require.Len(t, got, 0)
	got[0].Status = runner.StatusRunning
}
