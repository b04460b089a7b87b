package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// mint issues a token with scopes.
func (e *env) mint(scopes ...string) string {
	e.t.Helper()
	ss, err := auth.ParseScopes(scopes)
	require.NoError(e.t, err)
	_, secret, err := e.auth.Issue(context.Background(), auth.IssueParams{Name: strings.Join(scopes, " "), Scopes: ss})
	require.NoError(e.t, err)
	return secret
}

// TestConsoleFollowsScopes performs the attacks of issue 12 through the console: a
// non-admin token signed in cannot see, create or revoke tokens, nor read or cancel
// another principal's run.
func TestConsoleFollowsScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	wf := e.createWorkflow(greetYAML)
	_, _, err := e.catalog.Publish(context.Background(), wf.ID, auth.Local())
	require.NoError(t, err)
	res, err := e.engine.Submit(context.Background(), runner.SubmitParams{Workflow: "greet", Input: json.RawMessage(`{"name":"Ada Lovelace"}`), By: &auth.Principal{ID: "someone-else", Scopes: auth.AdminScopes()}})
	require.NoError(t, err)
	admins, err := e.auth.List(context.Background())
	require.NoError(t, err)

	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.signIn(e.mint("runs:write:workflow=other")).Status)
	csrf := b.csrf("/console/keys")
	p := b.get("/console/tokens")
	require.Equal(t, http.StatusForbidden, p.Status)
	require.Contains(t, p.Body, "lacks the scope admin")
	require.Equal(t, http.StatusForbidden, b.post("/console/tokens", url.Values{"csrf": {csrf}, "name": {"mine"}}).Status)
	require.Equal(t, http.StatusForbidden, b.post("/console/tokens/"+admins[0].ID+"/revoke", url.Values{"csrf": {csrf}}).Status)
	require.Equal(t, http.StatusForbidden, b.get("/console/runs/"+res.Run.ID).Status)
	require.Equal(t, http.StatusForbidden, b.post("/console/runs/"+res.Run.ID+"/cancel", url.Values{"csrf": {csrf}}).Status)
	require.NotContains(t, b.get("/console/runs").Body, res.Run.ID, "the list holds only readable runs")
	require.Equal(t, http.StatusForbidden, b.post("/console/workflows", url.Values{"csrf": {csrf}, "definition": {greetYAML}}).Status)

	list, err := e.auth.List(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 2, "no token created, none revoked")

	// A failed resume shows the form's run again: only if the token may read it.
	w := e.browser()
	require.Equal(t, http.StatusSeeOther, w.signIn(e.mint("runs:write")).Status)
	p = w.post("/console/hooks/resume", url.Values{"csrf": {w.csrf("/console/keys")}, "token": {"nope"},
		"environment": {"production"}, "run": {res.Run.ID}, "payload": {"{"}})
	require.Equal(t, http.StatusForbidden, p.Status)
	require.NotContains(t, p.Body, "Ada Lovelace", "the run's input stays hidden")
}

// TestWebhookURLOnlyForWhoMayRun: the workflow page shows the webhook address, which
// starts runs without a token, only to a token that may start the workflow's runs.
func TestWebhookURLOnlyForWhoMayRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	token, err := e.catalog.WebhookToken(e.createWorkflow(greetYAML))
	require.NoError(t, err)
	for _, tc := range []struct {
		scopes []string
		shown  bool
	}{
		{[]string{"runs:read"}, false},
		{[]string{"runs:read", "runs:write:workflow=greet"}, true},
		{[]string{"admin"}, true},
	} {
		b := e.browser()
		require.Equal(t, http.StatusSeeOther, b.signIn(e.mint(tc.scopes...)).Status)
		p := b.get("/console/workflows/greet")
		require.Equal(t, http.StatusOK, p.Status, tc.scopes)
		require.Equal(t, tc.shown, strings.Contains(p.Body, "/webhooks/"+token), tc.scopes)
	}
}

// TestRunListHidesWhichWorkflowsExist: a token that reads only some runs gets the same
// page for runs of a workflow that exists (a draft included) and of one that does not, so
// the console does not tell it which workflow names exist; an admin is told.
func TestRunListHidesWhichWorkflowsExist(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.createWorkflow(greetYAML)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.signIn(e.mint("runs:read:tag=billing")).Status)
	known, unknown := b.get("/console/runs?workflow=greet"), b.get("/console/runs?workflow=nosuch")
	require.Equal(t, http.StatusOK, unknown.Status)
	require.Equal(t, unknown.Status, known.Status)
	require.Equal(t, strings.ReplaceAll(unknown.Body, "nosuch", "greet"), known.Body)

	admin := e.browser()
	require.Equal(t, http.StatusSeeOther, admin.signIn(e.mint("admin")).Status)
	require.Equal(t, http.StatusNotFound, admin.get("/console/runs?workflow=nosuch").Status)
}
