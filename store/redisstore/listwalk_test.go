package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/redisstore"
)

// TestListReadsWholeOnlyKeptRuns: a list walks its index reading of each run only what its
// filter looks at; it reads whole only the runs it keeps (a page's worth and one more), so
// that a page passing over thousands of runs does not carry their steps, inputs and
// outputs.
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
	redisstore.OnRoundTrips(s, func(commands []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, name := range commands {
			if name == "hgetall" {
				whole++
			}
		}
	})
	tests := []struct {
		name  string
		p     runner.ListRunsParams
		first string // the first run listed
		runs  int    // runs listed
		whole int    // runs read whole
	}{
		{"environment", runner.ListRunsParams{Environment: runner.EnvTest}, "kept", 1, 1},
		{"readable and status", runner.ListRunsParams{Environment: runner.EnvTest, Status: runner.StatusPending, Readable: &runner.Readable{StartedBy: "alice"}}, "kept", 1, 1},
		{"all: a page and the next run", runner.ListRunsParams{}, "other-119", 5, 6},
	}
	for _, tc := range tests {
		tc.p.Limit = 5
		mu.Lock()
		whole = 0
		mu.Unlock()
		runs, _, err := s.ListRuns(ctx, tc.p)
		require.NoError(t, err, tc.name)
		require.Len(t, runs, tc.runs, tc.name)
		require.Equal(t, tc.first, runs[0].ID, tc.name)
		require.JSONEq(t, `{"name":"w"}`, string(runs[0].Definition), tc.name)
		mu.Lock()
		require.Equal(t, tc.whole, whole, "%s: only the runs kept are read whole", tc.name)
		mu.Unlock()
	}
}

// TestListPastMalformedIndexEntries: index entries no store wrote (a hand edit, a tool
// writing to the prefix) are passed over, never a crash: the runs around them are listed.
func TestListPastMalformedIndexEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, rdb, prefix := freshRaw(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	for i, id := range []string{"older", "newer"} {
		require.NoError(t, runnertest.Create(ctx, s, &runner.Run{ID: id, WorkflowID: "wf", Workflow: "w", Environment: runner.EnvProduction,
			Status: runner.StatusPending, Input: json.RawMessage(`{}`), CreatedAt: at.Add(time.Duration(i) * time.Hour)}, nil))
	}
	for _, member := range []string{"x", "", "00000000000000000001", "1700000001000000000:"} {
		require.NoError(t, rdb.ZAdd(ctx, prefix+"runs:created", redis.Z{Member: member}).Err())
	}
	for _, limit := range []int{1, 2, 10} {
		ids, _ := runnertest.ListAll(t, s, runner.ListRunsParams{Limit: limit})
		require.Equal(t, []string{"newer", "older"}, ids, "limit %d", limit)
	}
}

// TestListServedByIndexTwoRoundTrips: a page whose filter the index serves whole (none,
// workflow only, status only) reads the index and then the runs it lists, whole: two round
// trips, with no sift of their filter fields between.
func TestListServedByIndexTwoRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := fresh(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	for i := range 12 {
		require.NoError(t, runnertest.Create(ctx, s, &runner.Run{ID: fmt.Sprintf("run-%02d", i), WorkflowID: "wf", Workflow: "w",
			Environment: runner.EnvProduction, Status: runner.StatusPending, Input: json.RawMessage(`{}`),
			Definition: json.RawMessage(`{"name":"w"}`), CreatedAt: at.Add(time.Duration(i) * time.Second)}, nil))
	}
	var mu sync.Mutex
	trips := 0
	redisstore.OnRoundTrips(s, func([]string) {
		mu.Lock()
		trips++
		mu.Unlock()
	})
	tests := []struct {
		name  string
		p     runner.ListRunsParams
		first string // the first run listed
		runs  int    // runs listed
	}{
		{"unfiltered", runner.ListRunsParams{Limit: 5}, "run-11", 5},
		{"workflow", runner.ListRunsParams{Limit: 5, WorkflowID: "wf"}, "run-11", 5},
		{"status", runner.ListRunsParams{Limit: 5, Status: runner.StatusPending}, "run-11", 5},
		{"short page", runner.ListRunsParams{Limit: 50}, "run-11", 12},
		{"no match", runner.ListRunsParams{Limit: 5, WorkflowID: "other"}, "", 0},
	}
	for _, tc := range tests {
		_, _, err := s.ListRuns(ctx, tc.p) // dials the connections a page uses, whose handshake is no trip of a page
		require.NoError(t, err, tc.name)
		mu.Lock()
		trips = 0
		mu.Unlock()
		runs, _, err := s.ListRuns(ctx, tc.p)
		require.NoError(t, err, tc.name)
		require.Len(t, runs, tc.runs, tc.name)
		want := 2
		if tc.runs == 0 {
			want = 1 // the index names no run: nothing to read
		} else {
			require.Equal(t, tc.first, runs[0].ID, tc.name)
		}
		mu.Lock()
		require.Equal(t, want, trips, "%s: the index, then the runs", tc.name)
		mu.Unlock()
	}
}

// TestListBoundAtMalformedIndexEntry: index entries no store wrote, wherever a page's
// examination bound stops (every bound is tried), fail no page and move no cursor: they
// are passed over unread and uncounted, and following the cursors lists every run once, in
// order, for a filter the index serves whole and for one it does not. Among them: an entry
// naming a real run in the wrong place, and one that parses but not as sortKey writes it,
// whose cursor would resume the walk below the runs after it.
func TestListBoundAtMalformedIndexEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, rdb, prefix := freshRaw(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	bad := []string{"x:run-1"}
	var want []string
	for i := range 4 {
		id := fmt.Sprintf("run-%d", i)
		created := at.Add(time.Duration(i) * time.Second)
		require.NoError(t, runnertest.Create(ctx, s, &runner.Run{ID: id, WorkflowID: "wf", Workflow: "w", Environment: runner.EnvProduction,
			Status: runner.StatusPending, Input: json.RawMessage(`{}`), CreatedAt: created}, nil))
		want = append([]string{id}, want...)
		member := fmt.Sprintf("%020d:%s", created.UnixNano(), id) // the run's own entry
		bad = append(bad, member[:20]+";", member[:20], fmt.Sprintf("%d:%s", created.UnixNano(), id))
	}
	for _, m := range bad {
		require.NoError(t, rdb.ZAdd(ctx, prefix+"runs:created", redis.Z{Member: m}).Err())
	}
	for _, served := range []bool{true, false} {
		for examine := 1; examine <= len(bad)+len(want); examine++ {
			for _, limit := range []int{1, 2, 10} {
				p := runner.ListRunsParams{Limit: limit, Examine: examine}
				if !served {
					p.Environment = runner.EnvProduction
				}
				ids, _ := runnertest.ListAll(t, s, p)
				require.Equal(t, want, ids, "served %t, examine %d, limit %d", served, examine, limit)
			}
		}
	}
}
