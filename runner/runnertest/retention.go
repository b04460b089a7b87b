package runnertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// step is a completed step record named id.
func step(id string) *runner.StepRecord {
	return &runner.StepRecord{ID: id, StepID: "s-" + id, Status: runner.StepCompleted, Attempts: 1,
		StartedAt: ptr(base), FinishedAt: ptr(base)}
}

// endLive claims r (created due now) and saves its end at base+at with one step, as a
// worker does: its step record is written as live runs' are.
func endLive(t *testing.T, s runner.Store, r *runner.Run, at time.Duration) {
	t.Helper()
	create(t, s, r)
	var lease runner.Lease
	for _, c := range claimed(t, s, "sweeper-test", 0, 100) {
		if c.Run.ID == r.ID {
			lease = c.Lease
		}
	}
	require.NotZero(t, lease, "the run is claimed")
	Ended(r, runner.StatusCompleted, at)
	r.Steps = []*runner.StepRecord{step("a")}
	require.NoError(t, s.SaveRun(context.Background(), lease, r, runner.SaveOptions{}))
}

func testDeleteRun(t *testing.T, s runner.Store) {
	ctx := context.Background()
	done := NewRun("done", 0, 0)
	endLive(t, s, done, time.Second)
	waiting := NewRun("waiting", 0, -1)
	waiting.Status = runner.StatusWaiting
	require.NoError(t, Create(ctx, s, waiting, Hook(runner.EnvProduction, "tok", "waiting")))

	require.ErrorIs(t, s.DeleteRun(ctx, "waiting"), runner.ErrRunActive)
	RequireRun(t, waiting, Get(t, s, "waiting"))
	_, err := s.GetHook(ctx, runner.EnvProduction, "tok")
	require.NoError(t, err, "a refused delete keeps the run's hook")

	require.NoError(t, s.DeleteRun(ctx, "done"))
	_, err = s.GetRun(ctx, "done")
	require.ErrorIs(t, err, runner.ErrNotFound)
	require.ErrorIs(t, s.DeleteRun(ctx, "done"), runner.ErrNotFound, "again")
	require.ErrorIs(t, s.DeleteRun(ctx, "nobody"), runner.ErrNotFound)
	runs, _, err := s.ListRuns(ctx, runner.ListRunsParams{})
	require.NoError(t, err)
	require.Len(t, runs, 1, "the deleted run is in no list")
	runs, _, err = s.ListRuns(ctx, runner.ListRunsParams{Status: runner.StatusCompleted})
	require.NoError(t, err)
	require.Empty(t, runs, "nor in its status's")

	again := NewRun("done", 0, -1)
	create(t, s, again)
	require.Empty(t, Get(t, s, "done").Steps, "no step record outlives its run")
}

// sweepAll runs the walk of p to its end in batches of limit and returns what it deleted
// and how many batches it took.
func sweepAll(t *testing.T, s runner.Store, p runner.SweepParams) (deleted, batches int) {
	t.Helper()
	for {
		res, err := s.SweepEnded(context.Background(), p)
		require.NoError(t, err)
		deleted, batches = deleted+res.Deleted, batches+1
		if res.Next == nil {
			return deleted, batches
		}
		require.Less(t, batches, 1000, "the walk ends")
		p.After = res.Next
	}
}

func testSweepEnded(t *testing.T, s runner.Store) {
	ctx := context.Background()
	var old, recent, active []string
	for i := range 12 {
		id := fmt.Sprintf("old-%02d", i)
		r := Ended(NewRun(id, time.Duration(i)*time.Second, -1), runner.StatusCompleted, time.Minute)
		if i%3 == 0 {
			r.Status = runner.StatusFailed
		}
		r.Steps = []*runner.StepRecord{step("a")}
		create(t, s, r)
		old = append(old, id)
	}
	live := NewRun("old-live", 13*time.Second, 0)
	endLive(t, s, live, 2*time.Minute)
	old = append(old, live.ID)
	for i := range 4 {
		id := fmt.Sprintf("recent-%d", i)
		create(t, s, Ended(NewRun(id, time.Duration(i)*time.Second, -1), runner.StatusCompleted, time.Hour))
		recent = append(recent, id)
	}
	for i := range 3 {
		id := fmt.Sprintf("active-%d", i)
		r := NewRun(id, time.Duration(i)*time.Second, -1)
		r.Status = runner.StatusWaiting
		require.NoError(t, Create(ctx, s, r, Hook(runner.EnvProduction, id, id)))
		active = append(active, id)
	}
	late := Ended(NewRun("late", 2*time.Hour, -1), runner.StatusCompleted, 3*time.Hour)
	create(t, s, late)

	cut := base.Add(30 * time.Minute)
	deleted, batches := sweepAll(t, s, runner.SweepParams{EndedBefore: cut, Limit: 5})
	require.Equal(t, len(old), deleted)
	require.GreaterOrEqual(t, batches, 4, "each batch examines at most its limit")
	for _, id := range old {
		_, err := s.GetRun(ctx, id)
		require.ErrorIs(t, err, runner.ErrNotFound, id)
	}
	for _, id := range recent {
		require.Equal(t, runner.StatusCompleted, Get(t, s, id).Status, "a run ended after the cut is kept")
	}
	for _, id := range active {
		require.Equal(t, runner.StatusWaiting, Get(t, s, id).Status, "an active run is never deleted")
		h, err := s.GetHook(ctx, runner.EnvProduction, id)
		require.NoError(t, err)
		require.Equal(t, id, h.RunID, "its hook is kept")
	}
	Get(t, s, "late")
	deleted, _ = sweepAll(t, s, runner.SweepParams{EndedBefore: cut, Limit: 5})
	require.Zero(t, deleted, "a second walk finds nothing more")
}

func testSweepWorkflow(t *testing.T, s runner.Store) {
	ctx := context.Background()
	mine := Ended(NewRun("mine", 0, -1), runner.StatusCompleted, time.Second)
	theirs := Ended(NewRun("theirs", 0, -1), runner.StatusCompleted, time.Second)
	theirs.WorkflowID = "wf-2"
	create(t, s, mine, theirs)
	deleted, _ := sweepAll(t, s, runner.SweepParams{WorkflowID: "wf-2", EndedBefore: base.Add(time.Minute), Limit: 10})
	require.Equal(t, 1, deleted)
	_, err := s.GetRun(ctx, "theirs")
	require.ErrorIs(t, err, runner.ErrNotFound)
	Get(t, s, "mine")
	runs, _, err := s.ListRuns(ctx, runner.ListRunsParams{WorkflowID: "wf-2"})
	require.NoError(t, err)
	require.Empty(t, runs, "the workflow's list drops it")
}

// testSweepChildOfActiveParent: an ended child run whose parent is still active is kept
// (the parent reads the child's end when it resumes, and would start it anew were it
// gone), by the sweep and by DeleteRun, until the parent ends.
func testSweepChildOfActiveParent(t *testing.T, s runner.Store) {
	ctx := context.Background()
	parent := NewRun("parent", 0, -1)
	parent.Status = runner.StatusWaiting
	child := Ended(NewRun("child", time.Second, -1), runner.StatusCompleted, 2*time.Second)
	child.ParentRunID = "parent"
	orphan := Ended(NewRun("orphan", time.Second, -1), runner.StatusCompleted, 2*time.Second)
	orphan.ParentRunID = "gone"
	create(t, s, parent, child, orphan)

	cut := runner.SweepParams{EndedBefore: base.Add(time.Hour), Limit: 10}
	deleted, _ := sweepAll(t, s, cut)
	require.Equal(t, 1, deleted, "the child of a deleted parent goes")
	require.ErrorIs(t, s.DeleteRun(ctx, "child"), runner.ErrRunActive)
	Get(t, s, "child")

	c := claimed(t, s, "A", 3*time.Second, 10)
	require.Len(t, c, 1, "the parent was made due by its child's end")
	p := c[0].Run
	Ended(p, runner.StatusCompleted, 3*time.Second)
	require.NoError(t, s.SaveRun(ctx, c[0].Lease, p, runner.SaveOptions{}))
	deleted, _ = sweepAll(t, s, cut)
	require.Equal(t, 2, deleted, "once the parent ended, both go")
}
