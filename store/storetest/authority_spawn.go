package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// The tags of the workflows the attackers' steps start: the narrowed and the granted
// actor may start a child attack's adopter (runs:write by its tag), only the granted one a
// spawn attack's workflow.
const (
	adopterTag = "adopter"
	spawnedTag = "spawned"
)

// spawnedPublisher publishes the workflow a spawn attack starts: an admin of its own, so
// that its children's authority shows the limit of their version's publisher.
var spawnedPublisher = auth.Principal{ID: "tok-spawned-publisher", Scopes: auth.AdminScopes()}

// checkSpawnAttack: the attacker's workflow step (word "workflow") or foreach with a
// workflow (word "foreach", over two items) starts runs of an admin's other workflow.
// Refused, the step (the foreach's first iteration) fails NOT_FOUND exactly as for a
// workflow that does not exist, and no run of that workflow is written; granted, every
// child runs and acts for its parent's authority limited by its own version's publisher.
func checkSpawnAttack(t *testing.T, env *authorityEnv, a attack) {
	spawned := a.workflow + "-spawned"
	res, err := env.submit(a, `{}`)
	require.NoError(t, err)
	if !a.allowed {
		r := env.await(t, res.Run.ID, runner.StatusFailed)
		step := map[string]string{"workflow": "sub", "foreach": "each/0"}[a.word]
		require.Equal(t, runner.CodeNotFound, r.Error.Code)
		require.Equal(t, step, r.Error.Step, "the first iteration fails, and no later one starts")
		require.Equal(t, fmt.Sprintf(`step %q: workflow %q: workflow %[2]q: workflow not found`, r.Steps[0].ID, spawned),
			r.Error.Message, "as for a workflow that does not exist")
		env.requireNoRuns(t, spawned)
		return
	}
	r := env.await(t, res.Run.ID, runner.StatusCompleted)
	want := map[string]string{"workflow": `{"n": 0}`, "foreach": `[{"n": 0}, {"n": 1}]`}[a.word]
	require.JSONEq(t, want, string(r.Output))
	actsFor := append(slices.Clip(r.ActsFor), spawnedPublisher)
	children := env.runsOf(t, spawned)
	require.Len(t, children, map[string]int{"workflow": 1, "foreach": 2}[a.word])
	for _, c := range children {
		require.Equal(t, r.ID, c.ParentRunID)
		require.Equal(t, runner.Authority(actsFor), c.ActsFor, "the parent's authority, limited by the child's publisher")
	}
}

// runsOf is every run of workflow name, each read in full.
func (env *authorityEnv) runsOf(t *testing.T, name string) []*runner.Run {
	t.Helper()
	ctx := context.Background()
	w, err := env.cat.Get(ctx, name)
	require.NoError(t, err)
	listed, _, err := env.e.List(ctx, runner.ListRunsParams{WorkflowID: w.ID, Limit: 10})
	require.NoError(t, err)
	runs := make([]*runner.Run, len(listed))
	for i, l := range listed {
		runs[i], err = env.e.Get(ctx, l.ID)
		require.NoError(t, err)
	}
	return runs
}
