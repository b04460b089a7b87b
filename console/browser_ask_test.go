package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/browsertest"
	"github.com/gorunner/gorunner/runner"
)

// askTemplateYAML asks a question whose message is a template over the input.
const askTemplateYAML = `name: approve-request
input:
  type: object
  properties: {requestId: {type: string}}
steps:
  - id: decision
    hook:
      token: "approve:${{ input.requestId }}"
      ask:
        message: "Approve request ${{ input.requestId }}?"
        schema:
          type: object
          properties: {approved: {type: boolean, title: Approve}}
          required: [approved]
`

// TestBrowserAskMessage: in headless Chromium, the approval form of a run shows the
// question as evaluated for that run (the one MCP shows), never the raw template, and
// approving from it completes the run.
func TestBrowserAskMessage(t *testing.T) {
	ctx := browsertest.New(t, 2*time.Minute)
	e := newEnv(t, "")
	run, err := e.engine.Wait(context.Background(), e.publishAndRun(askTemplateYAML, `{"requestId": "R-42"}`), 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, runner.StatusWaiting, run.Status)

	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, actions...))
	}
	do(chromedp.Navigate(e.srv.URL+"/"), chromedp.WaitVisible(css("#token")))
	do(chromedp.SendKeys(css("#token"), e.token), chromedp.Submit(css("#token")), chromedp.WaitVisible(css("form.signout button")))
	do(chromedp.Navigate(e.srv.URL+"/console/runs/"+run.ID), chromedp.WaitVisible(css("#waits .hook p.ask")))
	msg, err := chromedp.Run(ctx, chromedp.Text(css("#waits .hook p.ask")))
	require.NoError(t, err)
	require.Equal(t, "Approve request R-42?", msg)

	do(chromedp.Click(css(`#waits .hook input[name="field.approved"]`)), chromedp.Click(css(`#waits .hook button[type="submit"]`)),
		chromedp.WaitVisible(css(`#run-status.completed`)))
}
