package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/redisstore"
)

// TestListReadsWholeOnlyKeptRuns: a list walks its index reading of each run only what its
// filter looks at; it reads whole only the runs it keeps, so that a page passing over
// thousands of runs does not carry their steps, inputs and outputs.
func TestListReadsWholeOnlyKeptRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := fresh(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	run := func(id string, i int, env string) *runner.Run {
		return &runner.Run{ID: id, WorkflowID: "wf", Workflow: "w", Environment: env, Status: runner.StatusPending,
			Input: json.RawMessage(`{}`), Definition: json.RawMessage(`{"name":"w"}`), CreatedAt: at.Add(time.Duration(i) * time.Second),
			StartedBy: "alice"}
	}
	require.NoError(t, runnertest.Create(ctx, s, run("kept", 0, runner.EnvTest), nil))
	for i := range 120 {
		require.NoError(t, runnertest.Create(ctx, s, run(fmt.Sprintf("other-%03d", i), i+1, runner.EnvProduction), nil))
	}
	var mu sync.Mutex
	whole := 0
	redisstore.OnCommands(s, func(name string) {
		if name == "hgetall" {
			mu.Lock()
			whole++
			mu.Unlock()
		}
	})
	for _, p := range []runner.ListRunsParams{
		{Environment: runner.EnvTest},
		{Environment: runner.EnvTest, Status: runner.StatusPending, Readable: &runner.Readable{StartedBy: "alice"}},
	} {
		p.Limit = 5
		mu.Lock()
		whole = 0
		mu.Unlock()
		runs, next, err := s.ListRuns(ctx, p)
		require.NoError(t, err)
		require.Empty(t, next)
		require.Len(t, runs, 1)
		require.Equal(t, "kept", runs[0].ID)
		require.JSONEq(t, `{"name":"w"}`, string(runs[0].Definition))
		mu.Lock()
		require.Equal(t, 1, whole, "only the run kept is read whole")
		mu.Unlock()
	}
}
