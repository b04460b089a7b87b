package runnertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// withSteps gives r n step records, each with an output of about size bytes.
func withSteps(r *runner.Run, n, size int) *runner.Run {
	r.Steps = make([]*runner.StepRecord, n)
	for i := range r.Steps {
		out, _ := json.Marshal(map[string]any{"i": i, "pad": strings.Repeat("x", size)})
		r.Steps[i] = &runner.StepRecord{
			ID: fmt.Sprintf("s%04d", i), StepID: fmt.Sprintf("%s/s%04d", r.ID, i), Status: runner.StepCompleted,
			Attempts: 1, Output: out, StartedAt: ptr(base.Add(time.Duration(i) * time.Millisecond)),
			FinishedAt: ptr(base.Add(time.Duration(i+1) * time.Millisecond)),
		}
	}
	return r
}

func testManySteps(t *testing.T, s runner.Store) {
	ctx := context.Background()
	r := withSteps(NewRun("many", 0, 0), 500, 1000)
	create(t, s, r)
	RequireRun(t, r, Get(t, s, "many"))

	c := claimOne(t, s, "A", 0, "many")
	RequireRun(t, r, c.Run)

	for _, st := range r.Steps {
		st.Status, st.Output = runner.StepSkipped, json.RawMessage(`{"saved":"all"}`)
	}
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}), "nil Steps writes every record")
	RequireRun(t, r, Get(t, s, "many"))

	runs, _, err := s.ListRuns(ctx, runner.ListRunsParams{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	RequireRun(t, r, runs[0])
}

func testPartialStepSave(t *testing.T, s runner.Store) {
	ctx := context.Background()
	r := withSteps(NewRun("part", 0, 0), 20, 10)
	for _, st := range r.Steps[10:] {
		st.Status, st.Output, st.StartedAt, st.FinishedAt = runner.StepPending, nil, nil, nil
	}
	create(t, s, r)
	lease := claimOne(t, s, "A", 0, "part").Lease

	want := Get(t, s, "part")
	r.Steps[10].Status, r.Steps[10].Attempts, r.Steps[10].Output = runner.StepCompleted, 1, json.RawMessage(`{"n":10}`)
	r.Steps[10].State = json.RawMessage(`{"child":"c1"}`)
	r.Steps[19].Status = runner.StepWaiting
	r.Steps[3].Output = json.RawMessage(`{"changed":"in memory only"}`)
	r.Status = runner.StatusRunning
	require.NoError(t, s.SaveRun(ctx, lease, r, runner.SaveOptions{Steps: []int{10, 19}}))

	want.Status = runner.StatusRunning
	want.Steps[10], want.Steps[19] = r.Steps[10], r.Steps[19]
	got := Get(t, s, "part")
	RequireRun(t, want, got)
	requireJSON(t, json.RawMessage(`{"child":"c1"}`), got.Steps[10].State)

	require.NoError(t, s.SaveRun(ctx, lease, r, runner.SaveOptions{Steps: []int{}}), "no step changed")
	RequireRun(t, want, Get(t, s, "part"))

	require.Error(t, s.SaveRun(ctx, lease, r, runner.SaveOptions{Steps: []int{20}}), "index out of range")
	RequireRun(t, want, Get(t, s, "part"))
}

func testClaimsCount(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r", 0, 0))
	require.Zero(t, Get(t, s, "r").Claims)
	claimAt := func(owner string, at time.Duration) runner.Claimed {
		t.Helper()
		return claimOne(t, s, owner, at, "r")
	}

	c := claimAt("A", 0)
	require.Equal(t, 1, c.Run.Claims)
	c = claimAt("B", 2*time.Minute)
	require.Equal(t, 2, c.Run.Claims, "A vanished: its lease expired")
	c.Run.Status = runner.StatusRunning
	require.NoError(t, s.SaveRun(ctx, c.Lease, c.Run, runner.SaveOptions{AttemptStart: true}))
	require.Equal(t, 2, Get(t, s, "r").Claims, "the start of an attempt is not progress")
	c = claimAt("C", 4*time.Minute)
	require.Equal(t, 3, c.Run.Claims)

	require.NoError(t, s.SaveRun(ctx, c.Lease, c.Run, runner.SaveOptions{}))
	require.Equal(t, 1, Get(t, s, "r").Claims, "progress: C is the only worker since")
	c = claimAt("D", 6*time.Minute)
	require.Equal(t, 2, c.Run.Claims, "C vanished after its progress")
	require.NoError(t, s.ReleaseRun(ctx, c.Lease))
	require.Zero(t, Get(t, s, "r").Claims, "a released run was given back, not lost")
	require.Equal(t, 1, claimAt("E", 6*time.Minute).Run.Claims)
}
