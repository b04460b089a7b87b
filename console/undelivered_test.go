package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// twoHooksYAML takes one payload on each of two tokens; it holds the first until it ends.
const twoHooksYAML = `name: two-hooks
input: {type: object}
steps:
  - {id: first, hook: {token: first-1}}
  - {id: second, hook: {token: second-1}}
`

// publishAndRun creates and publishes the workflow doc and starts a run of it with input,
// returning the run's ID.
func (e *env) publishAndRun(doc, input string) string {
	e.t.Helper()
	ctx := context.Background()
	w := e.createWorkflow(doc)
	_, _, err := e.catalog.Publish(ctx, w.ID, auth.Local())
	require.NoError(e.t, err)
	res, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: w.Name, Input: json.RawMessage(input)})
	require.NoError(e.t, err)
	return res.Run.ID
}

// TestUndeliveredShown: a payload sent to a token after its hook step took one, and never
// taken, is shown on the ended run's page.
func TestUndeliveredShown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, "")
	id := e.publishAndRun(twoHooksYAML, `{}`)
	deliver := func(token, payload string, want runner.Delivery) *runner.Run {
		var got *runner.Resumed
		require.Eventually(t, func() bool {
			var err error
			got, err = e.engine.Deliver(ctx, runner.EnvProduction, token, json.RawMessage(payload), 10*time.Second)
			return err == nil
		}, 10*time.Second, 20*time.Millisecond, "the hook is registered")
		require.Equal(t, want, got.Delivery)
		return got.Run
	}
	deliver("first-1", `{"n": 1}`, runner.Delivered)
	deliver("first-1", `{"n": "late"}`, runner.Queued)
	require.Equal(t, runner.StatusCompleted, deliver("second-1", `{}`, runner.Delivered).Status)

	b := e.browser()
	b.signIn(e.token)
	page := b.get("/console/runs/" + id)
	require.Equal(t, http.StatusOK, page.Status)
	require.Contains(t, page.Body, `id="undelivered"`)
	require.Contains(t, page.Body, "<code>first-1</code>")
	require.Contains(t, page.Body, "&#34;late&#34;")
}
