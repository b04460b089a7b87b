package console_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/browsertest"
)

// approvalYAML waits for an approval between two steps, then pauses two seconds so that
// the run page sees the last steps arrive live.
const approvalYAML = `name: expense
title: Approve an expense
input:
  type: object
  properties:
    ticket: {type: string}
    amount: {type: number}
steps:
  - id: prepare
    set: {ticket: "${{ input.ticket }}", amount: "${{ input.amount }}"}
  - id: approve
    hook: {token: "expense:${{ input.ticket }}"}
  - id: settle
    sleep: {duration: 2s}
  - id: notify
    set: {ticket: "${{ input.ticket }}", approved: "${{ steps.approve.output.approved }}"}
`

// screenshot saves the page to docs/ when GORUNNER_SCREENSHOTS=1 (docs/console.md shows them).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("GORUNNER_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("..", "docs", name), png, 0o644))
}

type css = chromedp.CSS

// TestBrowser drives the console in headless Chromium as a person would: sign in, create
// and publish a workflow, start a run, resume its waiting hook from the form, watch the
// remaining steps arrive live without a reload, and sign out.
func TestBrowser(t *testing.T) {
	ctx := browsertest.New(t, 3*time.Minute)
	e := newEnv(t, "")
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, actions...))
	}
	read := func(a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		require.NoError(t, err)
		return v
	}

	do(chromedp.Navigate(e.srv.URL+"/"), chromedp.WaitVisible(css("#token")))
	do(chromedp.SendKeys(css("#token"), e.token), chromedp.Submit(css("#token")), chromedp.WaitVisible(css("form.signout button")))
	require.True(t, strings.HasSuffix(read(chromedp.Location()), "/console/runs"))

	do(chromedp.Click(css(`a[href="/console/workflows"]`)), chromedp.WaitVisible(css("#definition")),
		chromedp.SetValue(css("#definition"), approvalYAML),
		chromedp.Click(css(`form[action="/console/workflows"] button`)),
		chromedp.WaitVisible(css("#webhook-url")))
	require.Contains(t, read(chromedp.Text(css("h1"))), "expense")

	do(chromedp.Click(css(`form[action$="/publish"] button`)), chromedp.WaitVisible(css(".notice")))
	require.Equal(t, "Published version 1.", read(chromedp.Text(css(".notice"))))

	do(chromedp.SendKeys(css("#field-ticket"), "T-17"), chromedp.SendKeys(css("#field-amount"), "42.5"),
		chromedp.Click(css("#start")), chromedp.WaitVisible(css("#waits .hook")))
	require.Equal(t, "Hook expense:T-17 step approve", read(chromedp.Text(css("#hook-title-1"))))
	require.Equal(t, "completed", read(chromedp.Text(css(`#step-0 [data-field="status"]`))))
	screenshot(t, ctx, "console-approval.png")

	do(chromedp.SetValue(css("#payload-1"), `{"approved": true, "by": "ada"}`),
		chromedp.Click(css(`#waits .hook button[type="submit"]`)), chromedp.WaitVisible(css(".notice")))
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.gorunnerLoaded = true`))
	require.NoError(t, err)
	require.NotEqual(t, "completed", read(chromedp.Text(css("#run-status"))), "the page came before the end")
	do(chromedp.WaitVisible(css(`#step-3.completed`)), chromedp.WaitVisible(css(`#run-status.completed`)))
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.gorunnerLoaded === true`))
	require.NoError(t, err)
	require.True(t, same, "the steps arrived on the page as it stood: live, not by a reload")
	require.JSONEq(t, `{"ticket": "T-17", "approved": true}`, read(chromedp.Text(css("#run-output"))))
	require.Equal(t, "1", read(chromedp.Text(css(`#step-2 [data-field="attempts"]`))))
	width, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('rect[data-index="2"]').getAttribute("width")`))
	require.NoError(t, err)
	require.NotEqual(t, "0%", width, "the time axis follows the run live too")
	screenshot(t, ctx, "console-run.png")

	do(chromedp.Click(css(".signout button")), chromedp.WaitVisible(css("#token")),
		chromedp.Navigate(e.srv.URL+"/console/runs"), chromedp.WaitVisible(css("#token")))
	require.Contains(t, read(chromedp.Location()), "/console/signin", "signed out: pages ask to sign in again")
}
