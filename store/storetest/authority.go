package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store"
)

// RunAuthority runs the suite of authority across runs (SPEC §6), attacks performed on a
// real catalog and engine over the backend: a victim run of another workflow holds token
// order:<id> and waits, with a secret in its input. Every onConflict policy of a hook step
// and of a start token, every run action and a child workflow whose start token adopts
// reach it as three actors: a narrowed token (runs:write and runs:read on its own workflow
// only, the version published by an admin), a webhook's run of a version published by a
// token with workflows:write only, and a token granted runs:read and runs:write on the
// victim's workflow. The first two reach nothing: a run step fails NOT_FOUND as for a run
// that does not exist, a token fails the step HOOK_CONFLICT or refuses the start naming no
// run, and the victim is left as it was. The third works as the policy says. newStore
// must return a fresh, empty, isolated store on each call.
func RunAuthority(t *testing.T, newStore func(t *testing.T) store.Backend) {
	env := newAuthorityEnv(t, newStore(t))
	suites := []struct {
		kind  string
		words []string
		check func(t *testing.T, env *authorityEnv, a attack)
	}{
		{"hook", conflictWords, checkHookAttack},
		{"start", conflictWords, checkStartAttack},
		{"run", []string{"status", "result", "cancel", "resume"}, checkRunAttack},
		{"child", []string{"adopt"}, checkChildAttack},
		{"spawn", []string{"workflow", "foreach"}, checkSpawnAttack},
	}
	for _, su := range suites {
		for _, word := range su.words {
			for _, ac := range actors {
				t.Run(su.kind+"/"+word+"/"+ac.name, func(t *testing.T) {
					t.Parallel()
					su.check(t, env, env.prepare(t, su.kind, word, ac))
				})
			}
		}
	}
}

// conflictWords are the onConflict policies.
var conflictWords = []string{"fail", "reject", "adopt", "forward", "supersede", "continue"}

// The principals of the suite.
var (
	admin = auth.Principal{ID: "tok-admin", Scopes: auth.AdminScopes()}
	// author may write workflows, publish them and rotate their webhooks, but holds no
	// runs:* scope at all.
	author = auth.Principal{ID: "tok-author", Scopes: auth.Scopes{{Permission: auth.WorkflowsWrite}}}
)

// actor is who performs an attack: the principal starting the attacker's run (nil: a
// webhook's) for the attacker's workflow named wf, the publisher of its version, and
// whether that authority holds what the attack needs on the victim's run.
type actor struct {
	name      string
	by        func(wf string) *auth.Principal
	publisher auth.Principal
	allowed   bool
}

var actors = []actor{
	{"narrowed", func(wf string) *auth.Principal {
		return &auth.Principal{ID: "tok-narrow", Scopes: auth.Scopes{
			{Permission: auth.RunsWrite, Workflow: wf}, {Permission: auth.RunsRead, Workflow: wf},
			{Permission: auth.RunsWrite, Tag: adopterTag}}}
	}, admin, false},
	{"webhook", func(string) *auth.Principal { return nil }, author, false},
	{"granted", func(wf string) *auth.Principal {
		return &auth.Principal{ID: "tok-granted", Scopes: auth.Scopes{{Permission: auth.RunsWrite, Workflow: wf},
			{Permission: auth.RunsRead, Workflow: "victim"}, {Permission: auth.RunsWrite, Workflow: "victim"},
			{Permission: auth.RunsWrite, Tag: adopterTag}, {Permission: auth.RunsWrite, Tag: spawnedTag}}}
	}, admin, true},
}

// authorityEnv is the suite's catalog and engine over one store, with the victim's
// workflow published by an admin.
type authorityEnv struct {
	s   store.Backend
	cat *catalog.Service
	e   *runner.Engine
}

func newAuthorityEnv(t *testing.T, s store.Backend) *authorityEnv {
	ctx := context.Background()
	cat, err := catalog.New(s, &catalog.Config{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	e, err := runner.New(s, cat, cat, &runner.Config{Concurrency: 8, Owner: "authority"})
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	env := &authorityEnv{s: s, cat: cat, e: e}
	env.publish(t, `{"name": "victim", "input": {"type": "object"},
		"steps": [{"id": "wait", "hook": {"token": "order:${{ input.id }}"}}],
		"result": {"got": "${{ steps.wait.output }}"}}`, admin)
	return env
}

// attack is one attack prepared: the attacker's workflow (published by the actor's
// publisher), the victim run holding order:<ID> and the actor.
type attack struct {
	actor
	word     string // the policy or the action
	workflow string
	id       string
	victim   *runner.Run
}

// attackers are the attacker's definitions by kind (or kind/word, when the word needs one
// of its own), with the word (policy or action), the workflow's name and the name of the
// workflow a child step starts filled in.
var attackers = map[string]string{
	"hook": `{"name": %[2]q, "input": {"type": "object"},
		"steps": [{"id": "claim", "hook": {"token": "order:${{ input.id }}", "onConflict": %[1]q}}]}`,
	"start": `{"name": %[2]q, "input": {"type": "object"},
		"start": {"token": "order:${{ input.id }}", "onConflict": %[1]q},
		"steps": [{"id": "wait", "hook": {"token": "order:${{ input.id }}"}}]}`,
	"run": `{"name": %[2]q, "input": {"type": "object"},
		"steps": [{"id": "act", "run": {"action": %[1]q, "runId": "${{ input.runId }}"}}]}`,
	"run/resume": `{"name": %[2]q, "input": {"type": "object"},
		"steps": [{"id": "act", "run": {"action": %[1]q, "token": "order:${{ input.id }}", "payload": {"forged": true}}}]}`,
	"child": `{"name": %[2]q, "input": {"type": "object"},
		"steps": [{"id": "sub", "workflow": {"name": %[3]q, "input": {"id": "${{ input.id }}"}}}]}`,
	"adopter": `{"name": %[2]q, "input": {"type": "object"}, "tags": ["` + adopterTag + `"],
		"start": {"token": "order:${{ input.id }}", "onConflict": %[1]q},
		"steps": [{"id": "wait", "hook": {"token": "order:${{ input.id }}"}}]}`,
	"spawn/workflow": `{"name": %[2]q, "input": {"type": "object"},
		"steps": [{"id": "sub", "workflow": {"name": %[3]q, "input": {"n": 0}}}]}`,
	"spawn/foreach": `{"name": %[2]q, "input": {"type": "object"},
		"steps": [{"id": "each", "foreach": {"items": [0, 1], "workflow": {"name": %[3]q, "input": {"n": "${{ item }}"}}}}]}`,
	"spawned": `{"name": %[2]q, "input": {"type": "object"}, "tags": ["` + spawnedTag + `"],
		"steps": [{"id": "echo", "set": {"n": "${{ input.n }}"}}]}`,
}

// prepare publishes the attacker's workflow as the actor's publisher and starts a victim
// run of its own.
func (env *authorityEnv) prepare(t *testing.T, kind, word string, ac actor) attack {
	name := kind + "-" + word + "-" + ac.name
	var child string
	switch kind {
	case "child": // the workflow the child step starts, an admin's
		child = name + "-adopter"
		env.publish(t, fmt.Sprintf(attackers["adopter"], word, child), admin)
	case "spawn":
		child = name + "-spawned"
		env.publish(t, fmt.Sprintf(attackers["spawned"], word, child), spawnedPublisher)
	}
	def, ok := attackers[kind+"/"+word]
	if !ok {
		def = attackers[kind]
	}
	env.publish(t, fmt.Sprintf(def, word, name, child), ac.publisher)
	return attack{actor: ac, word: word, workflow: name, id: name, victim: env.victimRun(t, name)}
}

func (env *authorityEnv) publish(t *testing.T, def string, by auth.Principal) {
	t.Helper()
	ctx := context.Background()
	w, err := env.cat.Create(ctx, []byte(def))
	require.NoError(t, err)
	_, _, err = env.cat.Publish(ctx, w.ID, by)
	require.NoError(t, err)
}

// victimRun starts a run of the victim's workflow, as the admin, holding order:<id>.
func (env *authorityEnv) victimRun(t *testing.T, id string) *runner.Run {
	t.Helper()
	res, err := env.e.Submit(context.Background(), runner.SubmitParams{Workflow: "victim", By: &admin,
		Input: json.RawMessage(fmt.Sprintf(`{"id": %q, "secret": "s3cret"}`, id))})
	require.NoError(t, err)
	return env.await(t, res.Run.ID, runner.StatusWaiting)
}

// submit starts the attacker's run with input, as the actor.
func (env *authorityEnv) submit(a attack, input string) (*runner.SubmitResult, error) {
	return env.e.Submit(context.Background(), runner.SubmitParams{Workflow: a.workflow, By: a.by(a.workflow),
		Input: json.RawMessage(input)})
}

// attackRun starts the attacker's run on the victim (its token's id and its run ID) and
// waits for it to reach status.
func (env *authorityEnv) attackRun(t *testing.T, a attack, status runner.Status) *runner.Run {
	t.Helper()
	return env.attackWith(t, a, a.victim.ID, status)
}

// attackWith is attackRun naming run runID.
func (env *authorityEnv) attackWith(t *testing.T, a attack, runID string, status runner.Status) *runner.Run {
	t.Helper()
	res, err := env.submit(a, fmt.Sprintf(`{"id": %q, "runId": %q}`, a.id, runID))
	require.NoError(t, err)
	return env.await(t, res.Run.ID, status)
}

// await polls run id until it has status; a run that ends otherwise fails the test.
func (env *authorityEnv) await(t *testing.T, id string, status runner.Status) *runner.Run {
	t.Helper()
	var r *runner.Run
	var err error
	require.Eventually(t, func() bool {
		r, err = env.e.Get(context.Background(), id)
		return err != nil || r.Status == status || r.Status.Terminal()
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, status, r.Status, "run %s of %s (error %+v)", id, r.Workflow, r.Error)
	return r
}

// awaitAdopted polls the attacker's run id until its first step waits for the victim: its
// state names the victim's run.
func (env *authorityEnv) awaitAdopted(t *testing.T, a attack, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		r, err := env.e.Get(context.Background(), id)
		return err == nil && strings.Contains(string(r.Steps[0].State), a.victim.ID)
	}, 10*time.Second, 5*time.Millisecond)
}

// resumeVictim sends payload to the victim's token and waits for the victim to complete
// with it: no payload was queued before it, and the victim was neither cancelled nor
// ended.
func (env *authorityEnv) resumeVictim(t *testing.T, a attack, payload string) {
	t.Helper()
	owner, err := env.e.Resume(context.Background(), runner.EnvProduction, "order:"+a.id, json.RawMessage(payload))
	require.NoError(t, err)
	require.Equal(t, a.victim.ID, owner, "the victim still holds its token")
	r := env.await(t, a.victim.ID, runner.StatusCompleted)
	require.JSONEq(t, `{"got": `+payload+`}`, string(r.Output), "the victim took the first payload queued")
}

// requireHidden checks that a refused attack left nothing of the victim behind in what the
// attacker sees (err's text, the attacker's output and error), and the victim as it was.
func (env *authorityEnv) requireHidden(t *testing.T, a attack, seen ...string) {
	t.Helper()
	for _, s := range seen {
		require.NotContains(t, s, a.victim.ID, "the victim's run ID crossed")
		require.NotContains(t, s, "s3cret", "the victim's input crossed")
	}
	env.resumeVictim(t, a, `"untouched"`)
}

// seenOf is what the attacker sees of its run r: its output and error.
func seenOf(r *runner.Run) []string {
	out := []string{string(r.Output)}
	if r.Error != nil {
		out = append(out, r.Error.Message)
	}
	for _, st := range r.Steps {
		out = append(out, string(st.Output), string(st.Conflict))
	}
	return out
}

// requireNoRuns checks that no run of workflow name was written.
func (env *authorityEnv) requireNoRuns(t *testing.T, name string) {
	t.Helper()
	w, err := env.cat.Get(context.Background(), name)
	require.NoError(t, err)
	runs, _, err := env.e.List(context.Background(), runner.ListRunsParams{WorkflowID: w.ID, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, runs, "a refused start writes no run")
}

// hiddenConflict is the message of a conflict over a's token that names no run.
func hiddenConflict(a attack) string {
	return fmt.Sprintf("token %q is owned by another run", "order:"+a.id)
}

// replaced is s with old replaced by new.
func replaced(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
