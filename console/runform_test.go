package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

// TestRunFormFollowsTheEnvironment: the run form's fields come from the input schema of
// the version a run would use: the published version's for production (the default once
// published), the draft's for a test run, also when a posted form comes back with a problem.
func TestRunFormFollowsTheEnvironment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, "")
	wf := e.createWorkflow(`{"name":"form","input":{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]},
		"steps":[{"id":"s","set":1}]}`)
	_, _, err := e.catalog.Publish(ctx, wf.ID, auth.Local())
	require.NoError(t, err)
	_, err = e.catalog.Update(ctx, "form", []byte(`{"name":"form","input":{"type":"object","properties":{"note":{"type":"string"}},"required":["note"]},
		"steps":[{"id":"s","set":1}]}`), wf.Rev)
	require.NoError(t, err)
	b := e.browser()
	b.signIn(e.token)

	p := b.get("/console/workflows/form")
	require.Contains(t, p.Body, `name="field.amount"`, "production, the default: the published version's fields")
	require.NotContains(t, p.Body, `name="field.note"`)

	csrf := b.csrf("/console/workflows/form")
	p = b.post("/console/workflows/form/run", url.Values{"csrf": {csrf}, "environment": {"test"}, "mode": {"fields"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `name="field.note"`, "a test run: the draft's fields")
	require.NotContains(t, p.Body, `name="field.amount"`)
}
