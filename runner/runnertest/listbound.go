package runnertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// testListBoundedWalk: a page examines at most p.Examine runs. One matching run under
// 2×bound+10 newer runs that do not match, by a filter the store's indexes do not serve,
// comes in pages that each examine the bound (empty, with a cursor), then a last page with
// the run and no cursor. A filter some store serves (completed runs in Redis) may find it
// on its first page instead.
func testListBoundedWalk(t *testing.T, s runner.Store) {
	const bound = 40
	old := NewRun("old", 0, -1)
	old.Status, old.FinishedAt, old.Environment = runner.StatusCompleted, ptr(base), runner.EnvTest
	old.WorkflowID, old.StartedBy = "wf-old", "carol"
	create(t, s, old)
	for i, id := range runIDs("new", 2*bound+10) {
		r := NewRun(id, time.Duration(i+1)*time.Second, -1)
		r.Status, r.FinishedAt = runner.StatusFailed, ptr(base)
		create(t, s, r)
	}
	walked := []int{0, 0, 1} // 40 runs, 40 runs, then the 10 left and the one
	tests := []struct {
		name   string
		p      runner.ListRunsParams
		served bool // some store's index may serve the filter whole
	}{
		{"environment", runner.ListRunsParams{Environment: runner.EnvTest}, false},
		{"readable workflows", runner.ListRunsParams{Readable: &runner.Readable{WorkflowIDs: []string{"wf-old"}}}, false},
		{"status and environment", runner.ListRunsParams{Status: runner.StatusCompleted, Environment: runner.EnvTest}, true},
		{"completed", runner.ListRunsParams{Status: runner.StatusCompleted}, true},
		{"own completed", runner.ListRunsParams{Status: runner.StatusCompleted, Readable: &runner.Readable{StartedBy: "carol"}}, true},
	}
	for _, tc := range tests {
		tc.p.Limit, tc.p.Examine = 5, bound
		got, sizes := ListAll(t, s, tc.p)
		require.Equal(t, []string{"old"}, got, tc.name)
		if tc.served && slices.Equal(sizes, []int{1}) {
			continue
		}
		require.Equal(t, walked, sizes, tc.name)
	}
}

// testListFilteredCursors: following cursors through pages that examine few runs (fewer
// than a page's worth of matches sometimes, more other times) yields every run a filter
// matches exactly once, newest first, as a brute-force filter of all runs does.
func testListFilteredCursors(t *testing.T, s runner.Store) {
	var all []*runner.Run
	for i := range 60 {
		r := NewRun(fmt.Sprintf("run-%02d", i), time.Duration(i/3)*time.Second, -1) // threes share a time
		r.WorkflowID = []string{"wf-a", "wf-b", "wf-c"}[i%3]
		r.Status = []runner.Status{runner.StatusFailed, runner.StatusCompleted, runner.StatusCompleted, runner.StatusWaiting, runner.StatusCancelled}[i%5]
		if r.Status.Terminal() {
			r.FinishedAt = ptr(r.CreatedAt)
		}
		if i%4 == 0 {
			r.Environment = runner.EnvTest
		}
		r.Task = i%7 < 2
		r.StartedBy = []string{"alice", "bob"}[i%11/7]
		all = append(all, r)
	}
	create(t, s, all...)
	alice := &runner.Readable{StartedBy: "alice"}
	alices := alice.Admitter()
	tests := []struct {
		name string
		p    runner.ListRunsParams
		keep func(r *runner.Run) bool
	}{
		{"all", runner.ListRunsParams{}, func(*runner.Run) bool { return true }},
		{"completed", runner.ListRunsParams{Status: runner.StatusCompleted}, func(r *runner.Run) bool { return r.Status == runner.StatusCompleted }},
		{"failed", runner.ListRunsParams{Status: runner.StatusFailed}, func(r *runner.Run) bool { return r.Status == runner.StatusFailed }},
		{"workflow and status", runner.ListRunsParams{WorkflowID: "wf-b", Status: runner.StatusCompleted}, func(r *runner.Run) bool {
			return r.WorkflowID == "wf-b" && r.Status == runner.StatusCompleted
		}},
		{"environment", runner.ListRunsParams{Environment: runner.EnvTest}, func(r *runner.Run) bool { return r.Environment == runner.EnvTest }},
		{"tasks", runner.ListRunsParams{Task: true}, func(r *runner.Run) bool { return r.Task }},
		{"own", runner.ListRunsParams{Readable: alice}, alices},
		{"own tasks in test", runner.ListRunsParams{Readable: alice, Task: true, Environment: runner.EnvTest}, func(r *runner.Run) bool {
			return alices(r) && r.Task && r.Environment == runner.EnvTest
		}},
		{"own failed", runner.ListRunsParams{Readable: alice, Status: runner.StatusFailed}, func(r *runner.Run) bool {
			return alices(r) && r.Status == runner.StatusFailed
		}},
		{"own or a workflow's, waiting", runner.ListRunsParams{Readable: &runner.Readable{StartedBy: "bob", WorkflowIDs: []string{"wf-c"}}, Status: runner.StatusWaiting}, func(r *runner.Run) bool {
			return (r.StartedBy == "bob" || r.WorkflowID == "wf-c") && r.Status == runner.StatusWaiting
		}},
		{"nothing readable", runner.ListRunsParams{Readable: &runner.Readable{}}, func(*runner.Run) bool { return false }},
	}
	newest := slices.Clone(all)
	slices.SortFunc(newest, func(a, b *runner.Run) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	for _, tc := range tests {
		want := []string{}
		for _, r := range newest {
			if tc.keep(r) {
				want = append(want, r.ID)
			}
		}
		for _, examine := range []int{1, 4, 7, 100} {
			p := tc.p
			p.Limit, p.Examine = 3, examine
			got, sizes := ListAll(t, s, p)
			require.Equal(t, want, got, "%s, examining %d", tc.name, examine)
			// each page but the last ends full or having examined its bound
			require.LessOrEqual(t, len(sizes), len(all)/examine+len(want)/3+1, "%s, examining %d: %v", tc.name, examine, sizes)
		}
	}
}

// testListManyReadableWorkflows: a principal may read the runs of any number of workflows
// (as many as its tags grant): a list filtered by 40,000 of them keeps the runs of those
// it names, and those the principal started, and no others.
func testListManyReadableWorkflows(t *testing.T, s runner.Store) {
	const n = 40_000
	readable := &runner.Readable{StartedBy: "carol", WorkflowIDs: make([]string, n)}
	for i := range n {
		readable.WorkflowIDs[i] = fmt.Sprintf("wf-%05d", i)
	}
	var want []string
	for i, wf := range []string{"wf-00000", "wf-other", "wf-39999", "wf-other", "wf-20000"} {
		r := NewRun(fmt.Sprintf("run-%d", i), time.Duration(i)*time.Second, -1)
		r.WorkflowID = wf
		if i == 3 {
			r.StartedBy = "carol"
		}
		create(t, s, r)
		if readable.Admitter()(r) {
			want = append([]string{r.ID}, want...)
		}
	}
	got, _ := ListAll(t, s, runner.ListRunsParams{Readable: readable, Limit: 2})
	require.Equal(t, []string{"run-4", "run-3", "run-2", "run-0"}, want)
	require.Equal(t, want, got)
}

// listAll follows p's cursors to the last page and returns the IDs listed and the size of
// each page; a page is at most p.Limit runs.
func ListAll(t *testing.T, s runner.Store, p runner.ListRunsParams) ([]string, []int) {
	t.Helper()
	got, sizes := []string{}, []int{}
	for {
		runs, next, err := s.ListRuns(context.Background(), p)
		require.NoError(t, err)
		require.LessOrEqual(t, len(runs), p.Limit)
		got, sizes = append(got, ids(runs)...), append(sizes, len(runs))
		if next == "" {
			return got, sizes
		}
		require.Less(t, len(sizes), 1000, "pagination must end")
		p.Cursor = next
	}
}

// Examining is Store with list pages that examine at most N runs each (ListRunsParams.
// Examine), so that a test sees the pages of a far larger store end short.
type Examining struct {
	runner.Store
	N int
}

// ListRuns lists as Store does, examining at most N runs.
func (s *Examining) ListRuns(ctx context.Context, p runner.ListRunsParams) ([]*runner.Run, string, error) {
	p.Examine = s.N
	return s.Store.ListRuns(ctx, p)
}

// testListEndsAtBound: a walk whose bound falls on the index's last entry has nothing after
// it, and its page says so (no cursor), rather than sending the caller on to an empty last
// page. The one matching run is the oldest of bound runs; a filter an index serves whole
// (all runs, a status) ends there too.
func testListEndsAtBound(t *testing.T, s runner.Store) {
	const bound = 40
	for i, id := range runIDs("run", bound) {
		r := NewRun(id, time.Duration(i)*time.Second, -1)
		if i == 0 {
			r.Environment = runner.EnvTest
		}
		create(t, s, r)
	}
	tests := []struct {
		name string
		p    runner.ListRunsParams
		want int
	}{
		{"environment", runner.ListRunsParams{Environment: runner.EnvTest}, 1},
		{"all", runner.ListRunsParams{}, bound},
		{"status", runner.ListRunsParams{Status: runner.StatusPending}, bound},
	}
	for _, tc := range tests {
		tc.p.Limit, tc.p.Examine = 100, bound
		runs, next, err := s.ListRuns(context.Background(), tc.p)
		require.NoError(t, err, tc.name)
		require.Len(t, runs, tc.want, tc.name)
		require.Empty(t, next, tc.name)
	}
}
