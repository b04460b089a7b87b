package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// failYAML fails at its second step when the input asks it to.
const failYAML = `name: sometimes
input:
  type: object
  properties: {fail: {type: boolean}, who: {type: string}}
steps:
  - id: first
    set: {who: "${{ input.who }}"}
  - id: second
    if: "${{ input.fail }}"
    fail: {message: "asked to fail", code: ASKED}
`

// ended publishes failYAML and returns an ended run of it: failed when fail is set.
func (e *env) ended(input string) *runner.Run {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.catalog.Get(ctx, "sometimes"); err != nil {
		wf := e.createWorkflow(failYAML)
		_, _, err := e.catalog.Publish(ctx, wf.ID, auth.Local())
		require.NoError(e.t, err)
	}
	res, err := e.engine.Submit(ctx, runner.SubmitParams{Workflow: "sometimes", Input: json.RawMessage(input)})
	require.NoError(e.t, err)
	r, err := e.engine.Wait(ctx, res.Run.ID, 10*time.Second)
	require.NoError(e.t, err)
	require.True(e.t, r.Status.Terminal())
	return r
}

// TestRunActionsNeedTheirScope: a token with runs:read sees no action buttons on a run
// page, and every action posted anyway (rerun, retry from the failure, bulk rerun, cancel,
// delete, resume, and their confirmation pages) is 403 and does nothing.
func TestRunActionsNeedTheirScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	failed := e.ended(`{"fail": true, "who": "ada"}`)
	waiting := e.publishAndRun(askTemplateYAML, `{"requestId": "R-1"}`)
	_, err := e.engine.Wait(context.Background(), waiting, 10*time.Second)
	require.NoError(t, err)
	count := func() int {
		runs, _, err := e.engine.List(context.Background(), runner.ListRunsParams{Limit: 100})
		require.NoError(t, err)
		return len(runs)
	}
	before := count()

	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.signIn(e.mint("runs:read")).Status)
	shown := b.get("/console/runs/" + failed.ID)
	require.Equal(t, http.StatusOK, shown.Status)
	for _, id := range []string{`id="rerun"`, `id="rerun-failure"`, `id="delete"`} {
		require.NotContains(t, shown.Body, id)
	}
	require.NotContains(t, b.get("/console/runs/"+waiting).Body, `action="/console/hooks/resume"`)
	require.NotContains(t, b.get("/console/runs?status=failed").Body, `id="bulk-rerun"`)
	csrf := b.csrf("/console/runs/" + failed.ID)
	form := url.Values{"csrf": {csrf}}
	for _, tc := range []struct {
		method, path string
		form         url.Values
	}{
		{"POST", "/console/runs/" + failed.ID + "/rerun", form},
		{"POST", "/console/runs/" + failed.ID + "/rerun", url.Values{"csrf": {csrf}, "from": {"failure"}}},
		{"POST", "/console/runs/rerun", url.Values{"csrf": {csrf}, "run": {failed.ID}}},
		{"POST", "/console/runs/" + failed.ID + "/delete", form},
		{"GET", "/console/runs/" + failed.ID + "/delete", nil},
		{"POST", "/console/runs/" + waiting + "/cancel", form},
		{"GET", "/console/runs/" + waiting + "/cancel", nil},
		{"POST", "/console/hooks/resume", url.Values{"csrf": {csrf}, "token": {"approve:R-1"}, "environment": {"production"},
			"run": {waiting}, "payload": {`{"approved": true}`}}},
	} {
		var p page
		if tc.method == "GET" {
			p = b.get(tc.path)
		} else {
			p = b.post(tc.path, tc.form)
		}
		require.Equal(t, http.StatusForbidden, p.Status, tc.method+" "+tc.path)
		require.Contains(t, p.Body, "runs:write", tc.path)
	}
	require.Equal(t, before, count(), "no run started")
	_, err = e.engine.Get(context.Background(), failed.ID)
	require.NoError(t, err, "not deleted")
	still, err := e.engine.Get(context.Background(), waiting)
	require.NoError(t, err)
	require.Equal(t, runner.StatusWaiting, still.Status, "not cancelled, not resumed")
}

// TestRunActions: with runs:write, the bulk rerun starts one rerun per failed run listed,
// and delete removes an ended run, behind its confirmation page.
func TestRunActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	failed := e.ended(`{"fail": true}`)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.signIn(e.token).Status)
	list := b.get("/console/runs?status=failed")
	require.Contains(t, list.Body, `id="bulk-rerun"`)
	csrf := b.csrf("/console/runs?status=failed")
	p := b.post("/console/runs/rerun", url.Values{"csrf": {csrf}, "run": {failed.ID}, "back": {"status=failed"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/console/runs?status=failed", p.Location)
	runs, _, err := e.engine.List(context.Background(), runner.ListRunsParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, failed.ID, runs[0].RerunOf)

	require.Contains(t, b.get("/console/runs/"+failed.ID+"/delete").Body, `id="confirm"`)
	p = b.post("/console/runs/"+failed.ID+"/delete", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	_, err = e.engine.Get(context.Background(), failed.ID)
	require.ErrorIs(t, err, runner.ErrNotFound)
}

// TestRunSearch: the runs page finds runs by ID, input text and error code, keeps the
// filters in its links, and refuses a search text over console.MaxSearchLength and bad
// dates with a 400.
func TestRunSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	failed := e.ended(`{"fail": true, "who": "grace hopper"}`)
	ok := e.ended(`{"who": "ada lovelace"}`)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.signIn(e.token).Status)
	for _, tc := range []struct {
		q       string
		in, out *runner.Run
	}{
		{"Lovelace", ok, failed},
		{"asked", failed, ok},
		{failed.ID, failed, ok},
	} {
		body := b.get("/console/runs?" + url.Values{"q": {tc.q}}.Encode()).Body
		require.Contains(t, body, tc.in.ID, tc.q)
		require.NotContains(t, body, tc.out.ID, tc.q)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	require.Contains(t, b.get("/console/runs?q=ASKED&from="+today+"&to="+today).Body, failed.ID)
	require.NotContains(t, b.get("/console/runs?from=2999-01-01").Body, failed.ID)

	hostile := b.get("/console/runs?" + url.Values{"q": {strings.Repeat("x", 100_000)}}.Encode())
	require.Equal(t, http.StatusBadRequest, hostile.Status)
	require.Contains(t, hostile.Body, "over 200 bytes")
	for _, q := range []string{"from=yesterday", "to=2026-13-01", "trigger=nope", "status=nope"} {
		require.Equal(t, http.StatusBadRequest, b.get("/console/runs?"+q).Status, q)
	}
	require.Equal(t, http.StatusOK, b.get("/favicon.ico").Status)
}

// TestSearchScanIsBounded: a search that matches nothing looks through at most
// console.MaxSearchExamined runs in one request and links to the rest.
func TestSearchScanIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	wf := e.createWorkflow(greetYAML)
	_, _, err := e.catalog.Publish(context.Background(), wf.ID, auth.Local())
	require.NoError(t, err)
	for range 530 {
		_, err := e.engine.Submit(context.Background(), runner.SubmitParams{Workflow: "greet", Input: json.RawMessage(`{"name":"x"}`)})
		require.NoError(t, err)
	}
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.signIn(e.token).Status)
	p := b.get("/console/runs?q=nobody")
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, "older runs follow")
	require.Contains(t, p.Body, "q=nobody")
}

// parallelHooksYAML waits on two hooks at once, one per parallel branch, one of them asking.
const parallelHooksYAML = `name: two-approvals
input: {type: object}
steps:
  - id: approvals
    parallel:
      branches:
        - { id: legal, steps: [{ id: ok, hook: { token: "legal-1" } }] }
        - id: finance
          steps:
            - id: ok
              hook:
                token: "finance-1"
                ask: {message: "Budget?", schema: {type: object, properties: {amount: {type: number}}}}
`

// TestEveryWaitingHookHasItsForm: a run waiting on two hooks at once (parallel branches)
// shows a resume form for each, grouped under its step on the time axis, and resuming one
// from its form leaves the other waiting.
func TestEveryWaitingHookHasItsForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	id := e.publishAndRun(parallelHooksYAML, `{}`)
	require.Eventually(t, func() bool {
		r, err := e.engine.Get(context.Background(), id)
		return err == nil && len(runner.Waits(r)) == 2
	}, 10*time.Second, 20*time.Millisecond)
	b := e.browser()
	require.Equal(t, http.StatusSeeOther, b.signIn(e.token).Status)
	body := b.get("/console/runs/" + id).Body
	require.Equal(t, 2, strings.Count(body, `action="/console/hooks/resume"`))
	for _, want := range []string{"<code>legal-1</code>", "<code>finance-1</code>", `<p class="ask">Budget?</p>`,
		`<details class="g-group" open>`, "approvals/legal/ok", "approvals/finance/ok"} {
		require.Contains(t, body, want)
	}
	csrf := b.csrf("/console/runs/" + id)
	p := b.post("/console/hooks/resume", url.Values{"csrf": {csrf}, "token": {"legal-1"}, "environment": {runner.EnvProduction},
		"run": {id}, "payload": {`{"ok": true}`}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Eventually(t, func() bool {
		r, err := e.engine.Get(context.Background(), id)
		return err == nil && len(runner.Waits(r)) == 1 && runner.Waits(r)[0].Hook == "finance-1"
	}, 10*time.Second, 20*time.Millisecond)
}
