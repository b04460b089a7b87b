package runnertest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// fullRun has every field a store keeps set.
func fullRun() *runner.Run {
	r := NewRun("full", 0, time.Second)
	r.Version = 3
	r.Environment = runner.EnvTest
	r.Status = runner.StatusWaiting
	r.Output = json.RawMessage(`{"ok":true}`)
	r.Error = &runner.Error{Code: "HTTP_ERROR", Message: "boom", Step: "call"}
	r.WaitingOn = &runner.WaitingOn{Hook: "order:1", SleepUntil: ptr(base.Add(time.Hour))}
	r.RerunOf = "older"
	r.StartedAt = ptr(base.Add(time.Millisecond))
	r.FinishedAt = ptr(base.Add(2 * time.Millisecond))
	r.CancelRequested = true
	r.StartToken = "order:1"
	r.ParentRunID = "parent"
	r.StartedBy = "principal-1"
	r.Task = true
	r.Depth = 3
	r.TraceParent = traceParent
	r.Steps = []*runner.StepRecord{{
		ID: "st-1", StepID: "run-full/call/1", Status: runner.StepCompleted, Attempts: 2,
		Output: json.RawMessage(`{"status":200}`), Error: &runner.Error{Code: "X", Message: "y"},
		StartedAt: ptr(base.Add(3 * time.Millisecond)), FinishedAt: ptr(base.Add(4 * time.Millisecond)),
		Conflict: json.RawMessage(`{"runId":"r0"}`), State: json.RawMessage(`{"next":"2031-01-01T00:00:00Z"}`),
		Input: json.RawMessage(`{"url":"https://api.example.com/x","headers":{"Authorization":"[redacted]"}}`),
		History: []runner.Attempt{
			{N: 1, StartedAt: base.Add(3 * time.Millisecond), FinishedAt: base.Add(3 * time.Millisecond),
				Error:   &runner.Error{Code: "HTTP_ERROR", Message: "GET https://api.example.com/x: 503", Step: "call"},
				Request: "GET https://api.example.com/x", Status: 503},
			{N: 2, StartedAt: base.Add(4 * time.Millisecond), FinishedAt: base.Add(4 * time.Millisecond),
				Request: "GET https://api.example.com/x", Status: 200},
		},
	}, {
		ID: "st-2", StepID: "run-full/wait/1", Status: runner.StepWaiting,
	}}
	return r
}

// RequireRun checks that got is want as a store keeps it (times compared as instants).
func RequireRun(t *testing.T, want, got *runner.Run) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.WorkflowID, got.WorkflowID)
	require.Equal(t, want.Workflow, got.Workflow)
	require.Equal(t, want.Version, got.Version)
	require.Equal(t, want.Environment, got.Environment)
	require.Equal(t, want.Status, got.Status)
	requireJSON(t, want.Input, got.Input)
	requireJSON(t, want.Output, got.Output)
	requireJSON(t, want.Definition, got.Definition)
	require.Equal(t, want.Error, got.Error)
	require.Equal(t, want.RerunOf, got.RerunOf)
	require.Equal(t, want.CancelRequested, got.CancelRequested)
	require.Equal(t, want.StartToken, got.StartToken)
	require.Equal(t, want.ParentRunID, got.ParentRunID)
	require.Equal(t, want.StartedBy, got.StartedBy)
	require.Equal(t, want.Task, got.Task)
	require.Equal(t, want.Depth, got.Depth)
	require.Equal(t, want.TraceParent, got.TraceParent)
	requireTime(t, want.CreatedAt, got.CreatedAt)
	requireTimePtr(t, want.StartedAt, got.StartedAt)
	requireTimePtr(t, want.FinishedAt, got.FinishedAt)
	if want.WaitingOn == nil {
		require.Nil(t, got.WaitingOn)
	} else {
		require.NotNil(t, got.WaitingOn)
		require.Equal(t, want.WaitingOn.Hook, got.WaitingOn.Hook)
		requireTimePtr(t, want.WaitingOn.SleepUntil, got.WaitingOn.SleepUntil)
	}
	require.Len(t, got.Steps, len(want.Steps))
	for i, ws := range want.Steps {
		requireStep(t, ws, got.Steps[i])
	}
}

func requireStep(t *testing.T, want, got *runner.StepRecord) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.StepID, got.StepID)
	require.Equal(t, want.Status, got.Status)
	require.Equal(t, want.Attempts, got.Attempts)
	require.Equal(t, want.Error, got.Error)
	requireJSON(t, want.Output, got.Output)
	requireJSON(t, want.Conflict, got.Conflict)
	requireJSON(t, want.State, got.State)
	requireTimePtr(t, want.StartedAt, got.StartedAt)
	requireTimePtr(t, want.FinishedAt, got.FinishedAt)
	requireJSON(t, want.Input, got.Input)
	require.Len(t, got.History, len(want.History))
	for i, a := range want.History {
		g := got.History[i]
		require.Equal(t, a.N, g.N)
		requireTime(t, a.StartedAt, g.StartedAt)
		requireTime(t, a.FinishedAt, g.FinishedAt)
		require.Equal(t, a.Error, g.Error)
		require.Equal(t, a.Request, g.Request)
		require.Equal(t, a.Status, g.Status)
	}
}

// requireJSON compares JSON documents; an absent one must stay absent.
func requireJSON(t *testing.T, want, got json.RawMessage) {
	t.Helper()
	if len(want) == 0 {
		require.Empty(t, got)
		return
	}
	require.JSONEq(t, string(want), string(got))
}

func testCreateAndGet(t *testing.T, s runner.Store) {
	want := fullRun()
	create(t, s, want)
	got := Get(t, s, want.ID)
	RequireRun(t, want, got)
	requireTime(t, want.WakeAt, got.WakeAt)

	bare := NewRun("bare", 0, -1)
	create(t, s, bare)
	got = Get(t, s, bare.ID)
	RequireRun(t, bare, got)
	require.True(t, got.WakeAt.IsZero())

	_, err := s.GetRun(context.Background(), "nope")
	require.ErrorIs(t, err, runner.ErrNotFound)
	require.Error(t, Create(context.Background(), s, NewRun("bare", 0, -1), nil), "duplicate ID")
}

// traceParent is a W3C traceparent as a traced admission gives its run.
const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// testTraceParent: the trace context of a run's admission (Run.TraceParent) is what a
// worker that claims the run reads, and stays through its saves and its end.
func testTraceParent(t *testing.T, s runner.Store) {
	ctx := context.Background()
	r := NewRun("r", 0, 0)
	r.TraceParent = traceParent
	create(t, s, r)
	c := claimOne(t, s, "A", time.Second, "r")
	require.Equal(t, traceParent, c.Run.TraceParent, "a claim reads the run's trace context")
	c.Run.Status = runner.StatusRunning
	require.NoError(t, s.SaveRun(ctx, c.Lease, c.Run, runner.SaveOptions{}))
	require.Equal(t, traceParent, Get(t, s, "r").TraceParent, "a save keeps it")
	Ended(c.Run, runner.StatusCompleted, time.Second)
	require.NoError(t, s.SaveRun(ctx, c.Lease, c.Run, runner.SaveOptions{}))
	require.Equal(t, traceParent, Get(t, s, "r").TraceParent, "an end keeps it")

	done := Ended(NewRun("done", 0, -1), runner.StatusCompleted, time.Second)
	done.TraceParent = traceParent
	create(t, s, done)
	require.Equal(t, traceParent, Get(t, s, "done").TraceParent, "a run admitted ended keeps it")
	create(t, s, NewRun("untraced", 0, -1))
	require.Empty(t, Get(t, s, "untraced").TraceParent)
}

func testList(t *testing.T, s runner.Store) {
	ctx := context.Background()
	mk := func(id string, created time.Duration, wf string, st runner.Status, by string) *runner.Run {
		r := NewRun(id, created, -1)
		r.WorkflowID, r.Status, r.StartedBy = wf, st, by
		if st.Terminal() {
			r.FinishedAt = ptr(base.Add(created))
		}
		return r
	}
	all := []*runner.Run{
		mk("r1", 1*time.Second, "wf-a", runner.StatusCompleted, "alice"),
		mk("r2", 2*time.Second, "wf-b", runner.StatusFailed, "bob"),
		mk("r3", 3*time.Second, "wf-a", runner.StatusFailed, ""),
		mk("r4", 4*time.Second, "wf-b", runner.StatusPending, "alice"),
		mk("r5", 5*time.Second, "wf-a", runner.StatusFailed, "bob"),
	}
	all[1].Environment, all[3].Environment = runner.EnvTest, runner.EnvTest // r2, r4
	all[0].Task, all[3].Task, all[4].Task = true, true, true                // r1, r4, r5
	all[1].Trigger, all[2].Trigger = runner.ScheduleTrigger(0, base), runner.Trigger{Type: runner.TriggerWebhook}
	all[4].Trigger = runner.ScheduleTrigger(2, base.Add(time.Hour))
	create(t, s, all...)
	tests := []struct {
		name string
		p    runner.ListRunsParams
		want []string
	}{
		{"all", runner.ListRunsParams{}, []string{"r5", "r4", "r3", "r2", "r1"}},
		{"workflow", runner.ListRunsParams{WorkflowID: "wf-a"}, []string{"r5", "r3", "r1"}},
		{"status", runner.ListRunsParams{Status: runner.StatusFailed}, []string{"r5", "r3", "r2"}},
		{"both", runner.ListRunsParams{WorkflowID: "wf-b", Status: runner.StatusFailed}, []string{"r2"}},
		{"none", runner.ListRunsParams{WorkflowID: "wf-z"}, []string{}},
		{"own", runner.ListRunsParams{Readable: &runner.Readable{StartedBy: "alice"}}, []string{"r4", "r1"}},
		{"own or workflow", runner.ListRunsParams{Readable: &runner.Readable{StartedBy: "bob", WorkflowIDs: []string{"wf-a"}}}, []string{"r5", "r3", "r2", "r1"}},
		{"workflows only", runner.ListRunsParams{Readable: &runner.Readable{WorkflowIDs: []string{"wf-b", "wf-z"}}}, []string{"r4", "r2"}},
		{"nothing readable", runner.ListRunsParams{Readable: &runner.Readable{}}, []string{}},
		{"readable and status", runner.ListRunsParams{Status: runner.StatusFailed, Readable: &runner.Readable{StartedBy: "bob"}}, []string{"r5", "r2"}},
		{"environment", runner.ListRunsParams{Environment: runner.EnvTest}, []string{"r4", "r2"}},
		{"environment and workflow", runner.ListRunsParams{Environment: runner.EnvProduction, WorkflowID: "wf-b"}, []string{}},
		{"tasks", runner.ListRunsParams{Task: true}, []string{"r5", "r4", "r1"}},
		{"tasks and status", runner.ListRunsParams{Task: true, Status: runner.StatusFailed}, []string{"r5"}},
		{"own tasks in an environment", runner.ListRunsParams{Task: true, Environment: runner.EnvProduction, Readable: &runner.Readable{StartedBy: "alice"}}, []string{"r1"}},
		{"own tasks in the other", runner.ListRunsParams{Task: true, Environment: runner.EnvTest, Readable: &runner.Readable{StartedBy: "alice"}}, []string{"r4"}},
		{"trigger", runner.ListRunsParams{Trigger: runner.TriggerSchedule}, []string{"r5", "r2"}},
		{"trigger and workflow", runner.ListRunsParams{Trigger: runner.TriggerSchedule, WorkflowID: "wf-a"}, []string{"r5"}},
		{"trigger none has", runner.ListRunsParams{Trigger: runner.TriggerMCP}, []string{}},
	}
	for _, tc := range tests {
		runs, next, err := s.ListRuns(ctx, tc.p)
		require.NoError(t, err, tc.name)
		require.Empty(t, next, tc.name)
		require.Equal(t, tc.want, ids(runs), tc.name)
	}
	got, err := s.GetRun(ctx, "r5")
	require.NoError(t, err)
	require.Equal(t, all[4].Trigger, got.Trigger, "a run keeps its trigger, index and tick")
}

func testListPagination(t *testing.T, s runner.Store) {
	ctx := context.Background()
	_, _, err := s.ListRuns(ctx, runner.ListRunsParams{Limit: 2, Cursor: "not a cursor"})
	require.ErrorIs(t, err, runner.ErrInvalidCursor)
	var want []string
	for i, id := range runIDs("run", 8) {
		// Pairs share a creation time, so the ID must break ties.
		create(t, s, NewRun(id, time.Duration(i/2)*time.Second, -1))
		want = append(want, id)
	}
	slices.Reverse(want)

	var got []string
	cursor, pages := "", 0
	for {
		runs, next, err := s.ListRuns(ctx, runner.ListRunsParams{Limit: 3, Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, len(runs), 3)
		got, cursor, pages = append(got, ids(runs)...), next, pages+1
		if cursor == "" {
			break
		}
		require.Less(t, pages, 4, "pagination must end")
	}
	require.Equal(t, want, got, "newest first, then by ID descending")
	require.Equal(t, 3, pages)
}

// testListFilteredPages pages a filter that few runs pass, far apart (more runs between
// them than a page), such as tasks/list's: every page but the last is full.
func testListFilteredPages(t *testing.T, s runner.Store) {
	ctx := context.Background()
	var want []string
	for i, id := range runIDs("run", 64) {
		r := NewRun(id, time.Duration(i)*time.Second, -1)
		r.Task = i%7 == 0
		create(t, s, r)
		if r.Task {
			want = append(want, id)
		}
	}
	slices.Reverse(want)

	var got []string
	var sizes []int
	p := runner.ListRunsParams{Task: true, Environment: runner.EnvProduction, Limit: 4}
	for {
		runs, next, err := s.ListRuns(ctx, p)
		require.NoError(t, err)
		got, sizes = append(got, ids(runs)...), append(sizes, len(runs))
		if next == "" {
			break
		}
		require.Less(t, len(sizes), 4, "pagination must end")
		p.Cursor = next
	}
	require.Equal(t, want, got)
	require.Equal(t, []int{4, 4, 2}, sizes)
}
