package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/internal/browsertest"
	"github.com/gorunner/gorunner/runner"
)

// operatorYAML is a workflow whose form the console builds from its input schema: an order
// number (at least 1), a priority from an enum, and a note.
const operatorYAML = `name: restock
input:
  type: object
  properties:
    order: {type: integer, minimum: 1, description: "The order to restock"}
    priority: {type: string, enum: [low, high]}
    note: {type: string}
  required: [order]
steps:
  - id: pick
    set: {order: "${{ input.order }}"}
  - id: rest
    sleep: {duration: 1h}
`

// TestBrowserOperator drives in headless Chromium what an operator needs of the console:
// the run form from the input schema (a field error for an invalid value, then a valid run),
// a run waiting on a sleep showing until when, search by input text, a failed http step's
// attempts (the connection's secret nowhere on the page), rerun and retry from the failure
// from the page, and a 390 px wide screen without horizontal scroll.
func TestBrowserOperator(t *testing.T) {
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
	count := func(selector string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, selector)))
		require.NoError(t, err)
		return n
	}
	do(chromedp.Navigate(e.srv.URL+"/"), chromedp.WaitVisible(css("#token")))
	do(chromedp.SendKeys(css("#token"), e.token), chromedp.Submit(css("#token")), chromedp.WaitVisible(css("form.signout button")))

	// The run form: an order below its minimum comes back with the error at its field.
	e.createWorkflow(operatorYAML)
	do(chromedp.Navigate(e.srv.URL+"/console/workflows/restock"), chromedp.WaitVisible(css("#field-order")))
	require.Contains(t, read(chromedp.Text(css("#run-form"))), "The order to restock")
	do(chromedp.SendKeys(css("#field-order"), "0"), chromedp.Click(css("#start")), chromedp.WaitVisible(css(".field-error")))
	require.Contains(t, read(chromedp.Text(css(".field-error"))), "1")
	do(chromedp.SetValue(css("#field-order"), "4711"), chromedp.SetValue(css("#field-priority"), "high"),
		chromedp.Click(css("#start")), chromedp.WaitVisible(css("#waits")))

	// A run waiting on a sleep says until when.
	sleeping := strings.TrimPrefix(read(chromedp.Location()), e.srv.URL+"/console/runs/")
	require.Contains(t, read(chromedp.Text(css("#sleep-1"))), "sleeps until")
	run, err := e.engine.Get(context.Background(), sleeping)
	require.NoError(t, err)
	require.JSONEq(t, `{"order": 4711, "priority": "high"}`, string(run.Input))
	require.Contains(t, read(chromedp.Text(css("#sleep-1"))), run.WaitingOn.SleepUntil.UTC().Format("2006-01-02 15:04:05Z"))
	screenshot(t, ctx, "console-waiting.png")

	// Search by input text finds the run, and the filters stay in the address.
	do(chromedp.Navigate(e.srv.URL+"/console/runs"), chromedp.WaitVisible(css("#f-q")),
		chromedp.SendKeys(css("#f-q"), "4711"), chromedp.Submit(css("#f-q")), chromedp.WaitVisible(css("table.runs")))
	require.Contains(t, read(chromedp.Location()), "q=4711")
	require.Contains(t, read(chromedp.Text(css("table.runs"))), "sleep until")
	require.Equal(t, 1, count(`table.runs a[href="/console/runs/`+sleeping+`"]`))

	// A failed http step lists each attempt with its request and status; the connection's
	// secret shows nowhere.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(api.Close)
	_, err = e.catalog.CreateConnection(context.Background(), catalog.ConnectionParams{Name: "stock", Type: "bearer",
		Secret: "sk-never-shown", Hosts: []string{strings.TrimPrefix(api.URL, "http://")}})
	require.NoError(t, err)
	failedID := e.publishAndRun(fmt.Sprintf(`name: stock-check
input: {type: object}
steps:
  - id: prepare
    set: {sku: "A-1"}
  - id: ask-supplier
    http: {url: "%s/stock/${{ steps.prepare.output.sku }}", connection: stock}
    retry: {maxAttempts: 3, initialInterval: 1ms, maxInterval: 1ms}
`, api.URL), `{}`)
	failed, err := e.engine.Wait(context.Background(), failedID, 20*time.Second)
	require.NoError(t, err)
	require.Equal(t, runner.StatusFailed, failed.Status)
	do(chromedp.Navigate(e.srv.URL+"/console/runs/"+failedID), chromedp.WaitVisible(css("#step-1 details.attempts")))
	require.Equal(t, 3, count("#step-1 tr.attempt"))
	attempts := read(chromedp.Text(css("#step-1 details.attempts")))
	require.Contains(t, attempts, "GET "+api.URL+"/stock/A-1")
	require.Contains(t, attempts, "503")
	html := read(chromedp.OuterHTML(css("html")))
	require.NotContains(t, html, "sk-never-shown")
	screenshot(t, ctx, "console-failed.png")

	// Retry from the failure: a new run that takes over the completed step.
	do(chromedp.Click(css("#rerun-failure")), chromedp.WaitVisible(css(".notice")))
	retried := strings.TrimPrefix(read(chromedp.Location()), e.srv.URL+"/console/runs/")
	require.NotEqual(t, failedID, retried)
	require.Contains(t, read(chromedp.Text(css(".notice"))), "Rerun from the failure of "+failedID)

	// Rerun from the page: a new run with the same input.
	done := e.publishAndRun(askTemplateYAML, `{"requestId": "R-7"}`)
	do(chromedp.Navigate(e.srv.URL+"/console/runs/"+done), chromedp.WaitVisible(css("#cancel")),
		chromedp.Click(css("#cancel")), chromedp.WaitVisible(css("#confirm")), chromedp.Click(css("#confirm")),
		chromedp.WaitVisible(css("#rerun")), chromedp.Click(css("#rerun")), chromedp.WaitVisible(css(".notice")))
	again := strings.TrimPrefix(read(chromedp.Location()), e.srv.URL+"/console/runs/")
	require.NotEqual(t, done, again)
	rerun, err := e.engine.Get(context.Background(), again)
	require.NoError(t, err)
	require.Equal(t, done, rerun.RerunOf)
	require.JSONEq(t, `{"requestId": "R-7"}`, string(rerun.Input))

	// A phone-width screen scrolls no page sideways.
	do(chromedp.EmulateViewport(390, 844))
	for _, path := range []string{"/console/runs", "/console/runs/" + failedID, "/console/workflows/restock"} {
		do(chromedp.Navigate(e.srv.URL+path), chromedp.WaitVisible(css("main")))
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
		require.NoError(t, err)
		require.False(t, wide, path+" scrolls sideways at 390 px")
	}
	screenshot(t, ctx, "console-phone.png")
}
