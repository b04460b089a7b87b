package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// TestSweepTrimsEveryIndex: once the ended runs are swept, nothing of them is left under
// the store's prefix, in no index, and the kept runs are where they were; so the store's
// keys track the runs it keeps.
func TestSweepTrimsEveryIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, url, prefix := freshAt(t)
	rdb := redisClient(t, url)
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := func() []string {
		out, err := rdb.Keys(ctx, prefix+"*").Result()
		require.NoError(t, err)
		return out
	}
	waiting := &runner.Run{ID: "waiting", WorkflowID: "wf", Workflow: "wf", Version: 1, Environment: runner.EnvProduction,
		Status: runner.StatusWaiting, Input: json.RawMessage(`{}`), CreatedAt: base}
	require.NoError(t, runnertest.Create(ctx, s, waiting,
		&runner.Hook{Environment: runner.EnvProduction, Token: "tok", RunID: "waiting", CreatedAt: base}))
	before := len(keys())
	for i := range 300 {
		end := base.Add(time.Second)
		r := &runner.Run{ID: fmt.Sprintf("old-%03d", i), WorkflowID: "wf", Workflow: "wf", Version: 1,
			Environment: runner.EnvProduction, Status: runner.StatusCompleted, Input: json.RawMessage(`{}`),
			CreatedAt: base, FinishedAt: &end,
			Steps: []*runner.StepRecord{{ID: "a", StepID: "a", Status: runner.StepCompleted, Attempts: 1}}}
		if i%2 == 0 {
			r.Status = runner.StatusFailed
		}
		require.NoError(t, runnertest.Create(ctx, s, r, nil))
	}
	// A stray entry that names no run is trimmed as the walk passes it.
	require.NoError(t, rdb.ZAdd(ctx, prefix+"runs:created", redis.Z{Member: "00000000000000000001:ghost"}).Err())

	p := runner.SweepParams{EndedBefore: base.Add(time.Minute), Limit: 64}
	deleted := 0
	for {
		res, err := s.SweepEnded(ctx, p)
		require.NoError(t, err)
		deleted += res.Deleted
		if res.Next == nil {
			break
		}
		p.After = res.Next
	}
	require.Equal(t, 300, deleted)
	require.Len(t, keys(), before, "only the kept run's keys are left")
	for _, index := range []string{"runs:created", "runs:wf:wf", "runs:status:waiting"} {
		members, err := rdb.ZRange(ctx, prefix+index, 0, -1).Result()
		require.NoError(t, err)
		require.Len(t, members, 1, index)
	}
	for _, gone := range []string{"runs:status:completed", "runs:status:failed"} {
		n, err := rdb.Exists(ctx, prefix+gone).Result()
		require.NoError(t, err)
		require.Zero(t, n, gone)
	}
	h, err := s.GetHook(ctx, runner.EnvProduction, "tok")
	require.NoError(t, err)
	require.Equal(t, "waiting", h.RunID)
	size, err := s.Size(ctx)
	require.NoError(t, err)
	require.Positive(t, size, "the server's used_memory")
}
