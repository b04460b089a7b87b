package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/redisstore"
)

// TestRunDefinitionByVersion: a run of a published version keeps no copy of the definition
// in its hash, and every read (by another process, with nothing kept: GetRun, ListRuns,
// ClaimRuns, RequestCancel) gives it back from the version; a run whose definition is not
// its version's (a test run, another definition) keeps its own; and a run stored before,
// with its definition and every field inline, reads as it was written.
func TestRunDefinitionByVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, url, prefix := freshAt(t)
	rdb := redisClient(t, url)
	fieldsOf := func(id string) map[string]string {
		m, err := rdb.HGetAll(ctx, prefix+"run:"+id).Result()
		require.NoError(t, err)
		return m
	}

	def, now, v := publishW(t, s)

	newRun := func(id string, version int, d json.RawMessage) *runner.Run {
		return &runner.Run{ID: id, WorkflowID: "wf", Workflow: "w", Version: version, Environment: runner.EnvProduction,
			Status: runner.StatusPending, Input: json.RawMessage(`{}`), Output: json.RawMessage(`null`),
			CreatedAt: now, WakeAt: now, Definition: d,
			Steps: []*runner.StepRecord{{ID: "a", StepID: "s-a", Status: runner.StepPending}}}
	}
	cases := []struct {
		run    *runner.Run
		inline bool
	}{
		{newRun("by-version", v.Version, v.Definition), false},
		{newRun("other-def", v.Version, json.RawMessage(`{"name":"w","steps":[]}`)), true},
		{newRun("no-version", v.Version+1, v.Definition), true},
		{newRun("test-run", 0, v.Definition), true},
	}
	for _, c := range cases {
		_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: c.run})
		require.NoError(t, err, c.run.ID)
		_, inline := fieldsOf(c.run.ID)["definition"]
		require.Equal(t, c.inline, inline, c.run.ID)
	}

	other, err := redisstore.Open(ctx, url, &redisstore.Config{Prefix: prefix}) // keeps nothing yet
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	for _, c := range cases {
		got, err := other.GetRun(ctx, c.run.ID)
		require.NoError(t, err, c.run.ID)
		require.JSONEq(t, string(c.run.Definition), string(got.Definition), c.run.ID)
	}
	listed, _, err := other.ListRuns(ctx, runner.ListRunsParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, listed, len(cases))
	for _, r := range listed {
		require.NotEmpty(t, r.Definition, r.ID)
	}
	fresh2, err := redisstore.Open(ctx, url, &redisstore.Config{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fresh2.Close() })
	claimed, err := fresh2.ClaimRuns(ctx, runner.ClaimRunsParams{Owner: "A", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Len(t, claimed, len(cases))
	for _, c := range claimed {
		require.NotEmpty(t, c.Run.Definition, c.Run.ID)
	}
	cancelled, err := fresh2.RequestCancel(ctx, "by-version", now)
	require.NoError(t, err)
	require.JSONEq(t, string(def), string(cancelled.Definition))

	// A run as stored before: every field, its definition inline, which differs from its
	// version's (what it ran is what it keeps).
	oldDef := `{"name":"w","steps":[{"id":"a","set":0}]}`
	nanos := "0" + "1796075250019362128"
	require.NoError(t, rdb.HSet(ctx, prefix+"run:old",
		"id", "old", "workflow_id", "wf", "workflow", "w", "version", "1", "environment", "production",
		"status", "completed", "input", `{"n":1}`, "output", `{"done":2}`, "error", "", "waiting_on", "",
		"rerun_of", "", "created_at", nanos, "started_at", nanos, "finished_at", nanos, "definition", oldDef,
		"wake_at", "00000000000000000000", "poke_at", "00000000000000000000", "cancel_requested", "0",
		"start_token", "", "parent_run_id", "", "depth", "0", "claims", "0", "started_by", "u1", "task", "1",
		"lease_owner", "", "lease_until", "00000000000000000000", "sort_key", nanos+":old",
		"step:0", `{"id":"a","stepId":"s-a","status":"completed","attempts":1,"output":0}`).Err())
	got, err := other.GetRun(ctx, "old")
	require.NoError(t, err)
	require.JSONEq(t, oldDef, string(got.Definition))
	require.Equal(t, runner.StatusCompleted, got.Status)
	require.Equal(t, "u1", got.StartedBy)
	require.True(t, got.Task)
	require.Equal(t, time.Unix(0, 1796075250019362128).UTC(), *got.FinishedAt)
	require.Len(t, got.Steps, 1)
	require.Equal(t, runner.StepCompleted, got.Steps[0].Status)
}

// TestRunWithoutItsVersion: the worst stored data for a run that refers to its version. A
// run whose version record is gone (deleted, or evicted by an allkeys-* Redis) reads
// without its definition, never as an error: alone (GetRun, RequestCancel), in a list
// page, and in a claim, whose worker ends it (the runner) and whose other runs are claimed
// as usual; a run from before whose inline definition is empty reads as stored, its
// version not asked.
func TestRunWithoutItsVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, rdb, prefix := freshRaw(t)
	def, now, v := publishW(t, s)
	_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: &runner.Run{ID: "r", WorkflowID: "wf", Workflow: "w",
		Version: v.Version, Environment: runner.EnvProduction, Status: runner.StatusPending, Input: json.RawMessage(`{}`),
		CreatedAt: now, WakeAt: now, Definition: v.Definition}})
	require.NoError(t, err)
	_, err = s.CreateRun(ctx, runner.CreateRunParams{Run: &runner.Run{ID: "inline", WorkflowID: "wf", Workflow: "w",
		Environment: runner.EnvTest, Status: runner.StatusPending, Input: json.RawMessage(`{}`),
		CreatedAt: now.Add(time.Second), WakeAt: now, Definition: def}})
	require.NoError(t, err)
	require.NoError(t, rdb.HSet(ctx, prefix+"run:empty", "id", "empty", "workflow_id", "wf", "workflow", "w",
		"version", "1", "environment", "production", "status", "completed", "created_at", "00000000000000000001",
		"definition", "", "sort_key", "00000000000000000001:empty").Err())
	require.NoError(t, rdb.Del(ctx, fmt.Sprintf("%swfver:wf:%d", prefix, v.Version)).Err())

	other, err := redisstore.Open(ctx, redisURL(t), &redisstore.Config{Prefix: prefix}) // keeps nothing
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	got, err := other.GetRun(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, runner.StatusPending, got.Status)
	require.Equal(t, v.Version, got.Version)
	require.Empty(t, got.Definition)
	got, err = other.GetRun(ctx, "empty")
	require.NoError(t, err)
	require.Empty(t, got.Definition)
	require.Equal(t, runner.StatusCompleted, got.Status)

	// A list page (one run a page, or both) lists the run without its definition.
	for _, p := range []runner.ListRunsParams{{Limit: 1}, {WorkflowID: "wf", Limit: 10}} {
		var listed []*runner.Run
		for {
			page, next, err := other.ListRuns(ctx, p)
			require.NoError(t, err)
			listed = append(listed, page...)
			if p.Cursor = next; next == "" {
				break
			}
		}
		require.Len(t, listed, 2)
		require.Equal(t, "inline", listed[0].ID)
		require.JSONEq(t, string(def), string(listed[0].Definition))
		require.Equal(t, "r", listed[1].ID)
		require.Equal(t, runner.StatusPending, listed[1].Status)
		require.Empty(t, listed[1].Definition)
	}

	// A cancel is recorded and answered with the run; a claim gives it, without its
	// definition, with the run claimed beside it.
	cancelled, err := other.RequestCancel(ctx, "r", now)
	require.NoError(t, err)
	require.True(t, cancelled.CancelRequested)
	require.Empty(t, cancelled.Definition)
	claimed, err := other.ClaimRuns(ctx, runner.ClaimRunsParams{Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10})
	require.NoError(t, err)
	byID := map[string]*runner.Run{}
	for _, c := range claimed {
		byID[c.Run.ID] = c.Run
	}
	require.Len(t, byID, 2)
	require.JSONEq(t, string(def), string(byID["inline"].Definition))
	require.Empty(t, byID["r"].Definition)
	require.True(t, byID["r"].CancelRequested)
}

// publishW creates workflow w (id wf) and publishes it as version 1, returning its
// definition, the time it used, and the version.
func publishW(t *testing.T, s *redisstore.Store) (json.RawMessage, time.Time, *catalog.Version) {
	t.Helper()
	ctx := context.Background()
	def := json.RawMessage(`{"name":"w","steps":[{"id":"a","set":1}]}`)
	now := time.Now().UTC()
	require.NoError(t, s.CreateWorkflow(ctx, &catalog.Workflow{ID: "wf", Name: "w", Rev: 1, WebhookDigest: "wh",
		Definition: def, CreatedAt: now, UpdatedAt: now}))
	v, _, err := s.Publish(ctx, "wf", "h1", auth.Local(), now)
	require.NoError(t, err)
	return def, now, v
}
