package storetest

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// checkHookAttack: a hook step of the attacker claims the victim's token under policy
// a.word. Refused, the step fails HOOK_CONFLICT naming no run; granted, the policy acts.
func checkHookAttack(t *testing.T, env *authorityEnv, a attack) {
	if !a.allowed {
		r := env.attackRun(t, a, runner.StatusFailed)
		require.Equal(t, runner.CodeHookConflict, r.Error.Code)
		require.Equal(t, hiddenConflict(a), r.Error.Message)
		env.requireHidden(t, a, seenOf(r)...)
		return
	}
	victim := a.victim.ID
	switch a.word {
	case "fail":
		r := env.attackRun(t, a, runner.StatusFailed)
		require.Equal(t, runner.CodeHookConflict, r.Error.Code)
		require.Contains(t, r.Error.Message, victim)
	case "reject":
		r := env.attackRun(t, a, runner.StatusCompleted)
		require.JSONEq(t, fmt.Sprintf(`{"status": "duplicate", "runId": %q}`, victim), string(r.Output))
	case "continue":
		r := env.attackRun(t, a, runner.StatusCompleted)
		require.JSONEq(t, fmt.Sprintf(`{"runId": %q}`, victim), string(r.Steps[0].Conflict))
	case "adopt":
		res, err := env.submit(a, fmt.Sprintf(`{"id": %q}`, a.id))
		require.NoError(t, err)
		env.awaitAdopted(t, a, res.Run.ID)
		env.resumeVictim(t, a, `"paid"`)
		require.JSONEq(t, `{"got": "paid"}`, string(env.await(t, res.Run.ID, runner.StatusCompleted).Output))
	case "forward":
		r := env.attackRun(t, a, runner.StatusCompleted)
		require.JSONEq(t, fmt.Sprintf(`{"status": "forwarded", "runId": %q}`, victim), string(r.Output))
		got := env.await(t, victim, runner.StatusCompleted)
		require.JSONEq(t, fmt.Sprintf(`{"got": {"id": %q, "runId": %q}}`, a.id, victim), string(got.Output))
	case "supersede":
		env.attackRun(t, a, runner.StatusWaiting)
		env.await(t, victim, runner.StatusCancelled)
	}
}

// checkStartAttack: the attacker's start token is the victim's. Refused, the start is a
// conflict naming no run and writes nothing; granted, the policy acts.
func checkStartAttack(t *testing.T, env *authorityEnv, a attack) {
	input := fmt.Sprintf(`{"id": %q}`, a.id)
	res, err := env.submit(a, input)
	var conflict *runner.TokenConflictError
	if !a.allowed {
		require.ErrorAs(t, err, &conflict)
		require.Empty(t, conflict.OwnerRunID)
		require.Equal(t, hiddenConflict(a), err.Error())
		env.requireNoRuns(t, a.workflow)
		env.requireHidden(t, a, err.Error())
		return
	}
	victim := a.victim.ID
	switch a.word {
	case "fail":
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, victim, conflict.OwnerRunID)
	case "reject", "adopt", "continue":
		require.NoError(t, err)
		require.True(t, res.Reused)
		require.Equal(t, victim, res.Run.ID)
	case "forward":
		require.NoError(t, err)
		require.True(t, res.Forwarded)
		got := env.await(t, victim, runner.StatusCompleted)
		require.JSONEq(t, `{"got": `+input+`}`, string(got.Output))
	case "supersede":
		require.NoError(t, err)
		require.NotEqual(t, victim, res.Run.ID)
		env.await(t, victim, runner.StatusCancelled)
	}
}

// checkRunAttack: a run step of the attacker acts on the victim. Refused, it fails exactly
// as on a run (or hook) that does not exist; granted, it acts.
func checkRunAttack(t *testing.T, env *authorityEnv, a attack) {
	if !a.allowed {
		r := env.attackRun(t, a, runner.StatusFailed)
		require.Equal(t, runner.CodeNotFound, r.Error.Code)
		require.Equal(t, notFoundMessage(t, env, a), r.Error.Message, "as for a run that does not exist")
		// Its error names the run (or token) the attacker gave, as for one that does not
		// exist: only the output is left to check.
		env.requireHidden(t, a, string(r.Output))
		return
	}
	victim := a.victim.ID
	switch a.word {
	case "status":
		r := env.attackRun(t, a, runner.StatusCompleted)
		require.JSONEq(t, `"waiting"`, string(r.Steps[0].Output))
	case "result":
		res, err := env.submit(a, fmt.Sprintf(`{"id": %q, "runId": %q}`, a.id, victim))
		require.NoError(t, err)
		env.resumeVictim(t, a, `"paid"`)
		require.JSONEq(t, `{"got": "paid"}`, string(env.await(t, res.Run.ID, runner.StatusCompleted).Steps[0].Output))
	case "cancel":
		env.attackRun(t, a, runner.StatusCompleted)
		env.await(t, victim, runner.StatusCancelled)
	case "resume":
		env.attackRun(t, a, runner.StatusCompleted)
		got := env.await(t, victim, runner.StatusCompleted)
		require.JSONEq(t, `{"got": {"forged": true}}`, string(got.Output))
	}
}

// notFoundMessage is the error of the attacker's run step on a run that does not exist (a
// token no run holds, for resume), with the victim's ID (token) in its place.
func notFoundMessage(t *testing.T, env *authorityEnv, a attack) string {
	t.Helper()
	if a.word == "resume" {
		none := a
		none.id = a.id + "-none"
		r := env.attackWith(t, none, "", runner.StatusFailed)
		return replaced(r.Error.Message, none.id, a.id)
	}
	missing := uuid.Must(uuid.NewV7()).String()
	r := env.attackWith(t, a, missing, runner.StatusFailed)
	return replaced(r.Error.Message, missing, a.victim.ID)
}

// checkChildAttack: the attacker's workflow step starts a workflow whose start token
// (adopt) is the victim's. Refused, the step fails HOOK_CONFLICT naming no run (NOT_FOUND
// for the webhook's run, whose publisher may start no run at all); granted, the parent
// adopts the victim's output.
func checkChildAttack(t *testing.T, env *authorityEnv, a attack) {
	res, err := env.submit(a, fmt.Sprintf(`{"id": %q}`, a.id))
	require.NoError(t, err)
	if !a.allowed {
		r := env.await(t, res.Run.ID, runner.StatusFailed)
		code := runner.CodeHookConflict
		if a.name == "webhook" {
			code = runner.CodeNotFound
		}
		require.Equal(t, code, r.Error.Code)
		env.requireHidden(t, a, seenOf(r)...)
		return
	}
	env.awaitAdopted(t, a, res.Run.ID)
	env.resumeVictim(t, a, `"paid"`)
	require.JSONEq(t, `{"got": "paid"}`, string(env.await(t, res.Run.ID, runner.StatusCompleted).Output))
}
