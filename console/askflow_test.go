package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// askYAML waits on a hook that asks for a typed answer, then returns it.
const askYAML = `name: refund
input: {type: object}
steps:
  - id: approve
    hook:
      token: refund-1
      ask:
        message: Approve the refund?
        schema:
          type: object
          required: [approved]
          properties:
            approved: {type: boolean, title: Approved}
            amount: {type: number, title: Amount}
            reason: {type: string, enum: [ok, fraud]}
  - id: done
    set: {approved: "${{ steps.approve.output.approved }}", amount: "${{ steps.approve.output.amount }}"}
`

// TestAskResumesRun: a run waiting on a hook with an ask shows the typed ask form on its
// page, and submitting the form resumes the run with the typed payload.
func TestAskResumesRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, "")
	e.createWorkflow(askYAML)
	b := e.browser()
	b.signIn(e.token)
	csrf := b.csrf("/console/workflows/refund")
	require.Equal(t, http.StatusSeeOther, b.post("/console/workflows/refund/publish", url.Values{"csrf": {csrf}}).Status)
	res, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: "refund", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	id := res.Run.ID
	reaches := func(st runner.Status) *runner.Run {
		var run *runner.Run
		require.Eventually(t, func() bool {
			r, err := e.engine.Get(ctx, id)
			run = r
			return err == nil && r.Status == st
		}, 10*time.Second, 20*time.Millisecond, "the run reaches %s", st)
		return run
	}
	reaches(runner.StatusWaiting)

	page := b.get("/console/runs/" + id)
	require.Equal(t, http.StatusOK, page.Status)
	for _, want := range []string{`<p class="ask">Approve the refund?</p>`, `<input type="checkbox" name="field.approved">`,
		`name="field.amount" type="number" step="any"`, `<select id="field-h0-reason" name="field.reason"`, `<option>fraud</option>`} {
		require.Contains(t, page.Body, want)
	}
	require.NotContains(t, page.Body, `id="payload-`, "the typed form, not the generic JSON one")

	form := url.Values{"csrf": {csrf}, "token": {"refund-1"}, "environment": {runner.EnvProduction}, "run": {id}, "ask": {"1"},
		"type.approved": {"boolean"}, "field.approved": {"on"}, "type.amount": {"number"}, "field.amount": {"12.5"},
		"type.reason": {"string"}, "field.reason": {"ok"}}
	p := b.post("/console/hooks/resume", url.Values{"token": form["token"], "environment": form["environment"]})
	require.Equal(t, http.StatusForbidden, p.Status, "no CSRF token: refused")
	p = b.post("/console/hooks/resume", form)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	done := reaches(runner.StatusCompleted)
	require.JSONEq(t, `{"approved": true, "amount": 12.5, "reason": "ok"}`, string(done.Steps[0].Output))
	require.JSONEq(t, `{"approved": true, "amount": 12.5}`, string(done.Output))
}

// definitionless reads runs without their definition, as a Redis store does once its
// record of their version is gone (evicted, or deleted by hand).
type definitionless struct{ runner.Store }

func (s definitionless) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	r, err := s.Store.GetRun(ctx, id)
	if r != nil {
		r.Definition = nil
	}
	return r, err
}

// TestRunPageWithoutDefinition: a run read without its definition has its page as any
// run: its steps by their records, and, waiting on a hook that asks, the ask form from the
// question the run holds (its definition is not needed for it); a generic payload that
// fits resumes it; cancelling from its page works too.
func TestRunPageWithoutDefinition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnvOver(t, func(s runner.Store) runner.Store { return definitionless{s} })
	e.createWorkflow(askYAML)
	b := e.browser()
	b.signIn(e.token)
	csrf := b.csrf("/console/workflows/refund")
	require.Equal(t, http.StatusSeeOther, b.post("/console/workflows/refund/publish", url.Values{"csrf": {csrf}}).Status)
	waiting := func() *runner.Run {
		res, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: "refund", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
		run, err := e.engine.Wait(ctx, res.Run.ID, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, runner.StatusWaiting, run.Status)
		run, err = e.engine.Get(ctx, run.ID)
		require.NoError(t, err)
		require.Empty(t, run.Definition, "read as the console reads it")
		return run
	}

	run := waiting()
	page := b.get("/console/runs/" + run.ID)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.Contains(t, page.Body, run.Steps[0].StepID)
	require.NotContains(t, page.Body, `id="payload-`)
	require.Contains(t, page.Body, "Approve the refund?")
	form := url.Values{"csrf": {csrf}, "token": {"refund-1"}, "environment": {runner.EnvProduction}, "run": {run.ID},
		"payload": {`{"approved": true}`}}
	require.Equal(t, http.StatusSeeOther, b.post("/console/hooks/resume", form).Status)
	require.Eventually(t, func() bool {
		r, err := e.engine.Get(ctx, run.ID)
		return err == nil && r.Status == runner.StatusCompleted
	}, 10*time.Second, 20*time.Millisecond, "the resumed run completes")

	run = waiting()
	p := b.post("/console/runs/"+run.ID+"/cancel", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, http.StatusOK, b.get(p.Location).Status)
	cancelled, err := e.engine.Get(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, runner.StatusCancelled, cancelled.Status)
}
