package runcard_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/browsertest"
)

type css = chromedp.CSS

// hostState is what the test host page records (window.host in web/host.js).
type hostState struct {
	Ready  bool     `json:"ready"`
	Errors []string `json:"errors"`
	Calls  []struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"calls"`
	Resource struct {
		URI      string         `json:"uri"`
		MIMEType string         `json:"mimeType"`
		Meta     map[string]any `json:"meta"`
	} `json:"resource"`
}

// card is the run card rendered by the host page in the browser.
type card struct {
	t     *testing.T
	ctx   context.Context
	frame *chromedp.Node // the iframe the card is in
}

// open has the host page call tool with args, as a model would, and show the result in the
// card, in theme; it returns once the card has initialized with the host.
func open(t *testing.T, ctx context.Context, e *env, tool string, args map[string]any, theme string) *card {
	t.Helper()
	return openHost(t, ctx, e, url.Values{"token": {e.token}, "tool": {tool}, "args": {mustJSON(t, args)}, "theme": {theme}})
}

// openScripted has the host page, with no server behind it, show script.result in the card
// in theme and answer the card's calls with script.replies.
func openScripted(t *testing.T, ctx context.Context, e *env, script map[string]any, theme string) *card {
	t.Helper()
	return openHost(t, ctx, e, url.Values{"script": {mustJSON(t, script)}, "theme": {theme}})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

func openHost(t *testing.T, ctx context.Context, e *env, q url.Values) *card {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(e.url+"/host/host.html?"+q.Encode())))
	c := &card{t: t, ctx: ctx}
	var h hostState
	require.Eventually(t, func() bool {
		var err error
		h, err = c.poll()
		return err == nil && (h.Ready || len(h.Errors) > 0)
	}, 30*time.Second, 20*time.Millisecond, "the card initializes with the host")
	require.Empty(t, h.Errors, "the host page failed")
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(css("#card")))
	require.NoError(t, err)
	c.frame = nodes[0]
	return c
}

func (c *card) host() hostState {
	c.t.Helper()
	h, err := c.poll()
	require.NoError(c.t, err)
	return h
}

// poll reads what the host page recorded.
func (c *card) poll() (hostState, error) {
	var h hostState
	raw, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`JSON.stringify(window.host || {})`))
	if err == nil {
		err = json.Unmarshal([]byte(raw), &h)
	}
	return h, err
}

func (c *card) do(actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	require.NoError(c.t, chromedp.Do(c.ctx, actions...))
}

func (c *card) in() chromedp.QueryOption { return chromedp.FromNode(c.frame) }

// wait waits for sel in the card; on a timeout it reports what the card shows instead.
func (c *card) wait(sel string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(sel), c.in())); err != nil {
		shown, _ := chromedp.Run(c.ctx, chromedp.Text(css("main"), c.in()))
		c.t.Fatalf("waiting for %s: %v; the card shows:\n%s\nthe host: %+v", sel, err, shown, c.host())
	}
}

func (c *card) text(sel string) string {
	c.t.Helper()
	v, err := chromedp.Run(c.ctx, chromedp.Text(css(sel), c.in()))
	require.NoError(c.t, err)
	return strings.TrimSpace(v)
}

func (c *card) attrs(sel string) map[string]string {
	c.t.Helper()
	v, err := chromedp.Run(c.ctx, chromedp.Attributes(css(sel), c.in()))
	require.NoError(c.t, err)
	return v
}

func (c *card) attr(sel, name string) string { c.t.Helper(); return c.attrs(sel)[name] }

// options are the values of a select's options.
func (c *card) options(sel string) []string {
	c.t.Helper()
	all, err := chromedp.Run(c.ctx, chromedp.AttributesAll(chromedp.CSSAll(sel+" option"), c.in()))
	require.NoError(c.t, err)
	var out []string
	for _, a := range all {
		out = append(out, a["value"])
	}
	return out
}

// output is the run's output the card shows.
func (c *card) output() map[string]any {
	c.t.Helper()
	var out map[string]any
	require.NoError(c.t, json.Unmarshal([]byte(c.text("#output")), &out))
	return out
}

// answer fills the ask form as a person would, with the keyboard: tick approved, type a
// name. The form is the ask's (approved, by) or, while waitingOn.hook is the token alone,
// the JSON payload box.
func (c *card) answer() {
	c.t.Helper()
	fields, err := chromedp.Run(c.ctx, chromedp.InnerHTML(css("#ask-fields"), c.in()))
	require.NoError(c.t, err)
	if !strings.Contains(fields, `id="ask-approved"`) {
		c.do(chromedp.SendKeys(css("#ask-payload"), `{"approved": true, "by": "Ada"}`, c.in()))
		return
	}
	c.do(chromedp.Focus(css("#ask-approved"), c.in()), chromedp.KeyEvent(" "),
		chromedp.SendKeys(css("#ask-by"), "Ada", c.in()))
}

// calls are the tools called after the host's own call (the first): the card's.
func (c *card) calls() []string {
	c.t.Helper()
	h := c.host()
	require.NotEmpty(c.t, h.Calls)
	var names []string
	for _, call := range h.Calls[1:] {
		names = append(names, call.Name)
	}
	return names
}

// screenshot saves the host page with the card to docs/ when GORUNNER_SCREENSHOTS=1.
func (c *card) screenshot(name string) {
	c.t.Helper()
	if os.Getenv("GORUNNER_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(c.ctx, chromedp.Screenshot(css("#card")))
	require.NoError(c.t, err)
	require.NoError(c.t, os.WriteFile(filepath.Join("..", "..", "docs", name), png, 0o644))
}

// TestRunCardInChromium renders the card in headless Chromium under a host page where
// ext-apps' AppBridge is the host and the MCP TypeScript SDK client its connection to
// GoRunner: a finished run, a run the card follows to its end by itself, an approval given
// and one declined from the card's form. The page requests nothing outside GoRunner.
func TestRunCardInChromium(t *testing.T) {
	e := newEnv(t) // first, so that the browser (cleaned up first) lets go of its connections
	// Site isolation off: the sandboxed card stays in the page's process, so that the
	// test reaches into it and its requests show in the page's network log.
	ctx := browsertest.New(t, 2*time.Minute,
		chromedp.Flag("disable-features", "SitePerProcess,IsolateOrigins,IsolateSandboxedIframes"),
		chromedp.Flag("disable-site-isolation-trials", true))
	var mu sync.Mutex
	var requested []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, r.Request.URL)
			mu.Unlock()
		}
	}))

	t.Run("a finished run", func(t *testing.T) {
		c := open(t, ctx, e, "greet", map[string]any{"name": "Ada"}, "light")
		c.wait("#status.completed")
		require.Equal(t, "completed", c.text("#status"))
		require.Equal(t, map[string]any{"message": "Hello, Ada!"}, c.output())
		c.wait(`#steps li[data-path="greeting"]`)
		require.Equal(t, "completed", c.text(`li[data-path="greeting"] .badge`))
		require.Regexp(t, `^\d+(\.\d)? m?s$`, c.text(`li[data-path="greeting"] .duration`))
		require.Empty(t, c.calls(), "a run that has ended is not followed")
		h := c.host()
		require.Equal(t, "ui://gorunner/run", h.Resource.URI)
		require.Equal(t, "text/html;profile=mcp-app", h.Resource.MIMEType)
		c.screenshot("mcp-app-run.png")
	})

	t.Run("a run followed to its end", func(t *testing.T) {
		c := open(t, ctx, e, "sleepy", map[string]any{}, "dark")
		c.wait("#status.waiting") // the call answered while the run sleeps
		require.Contains(t, c.text("#note"), "Sleeping until")
		require.Equal(t, "waiting", c.text(`li[data-path="nap"] .badge`))
		c.wait("#status.completed") // no tool call from the test: the card follows
		require.Equal(t, map[string]any{"rested": true}, c.output())
		require.Equal(t, "completed", c.text(`li[data-path="nap"] .badge`))
		require.Equal(t, []string{"gorunner_get_run"}, slices.Compact(c.calls()), "the card's calls: gorunner_get_run only")
		c.screenshot("mcp-app-run-dark.png")
	})

	t.Run("a running run followed to its end", func(t *testing.T) {
		c := open(t, ctx, e, "relay", map[string]any{}, "light")
		c.wait("#status.running") // the call stopped waiting after the tool's 1 s
		require.Equal(t, "Following the run…", c.text("#note"))
		c.wait("#status.completed")
		require.Equal(t, map[string]any{"rested": true}, c.output())
		require.Equal(t, []string{"gorunner_get_run"}, slices.Compact(c.calls()))
	})

	t.Run("an approval given from the form", func(t *testing.T) {
		c := open(t, ctx, e, "approval", map[string]any{"requestId": "R-1"}, "light")
		c.wait("#ask")
		require.Equal(t, "Waiting for approval:R-1", c.text("#ask-title"))
		c.answer()
		c.do(chromedp.Click(css("#approve"), c.in()))
		c.wait("#status.completed")
		require.Equal(t, map[string]any{"requestId": "R-1", "approved": true, "by": "Ada"}, c.output())
		require.Contains(t, c.calls(), "gorunner_resume_hook")
	})

	t.Run("an approval declined", func(t *testing.T) {
		c := open(t, ctx, e, "approval", map[string]any{"requestId": "R-2"}, "dark")
		c.wait("#ask")
		c.do(chromedp.Click(css("#decline"), c.in()))
		c.wait("#status.completed")
		out := c.output()
		require.Equal(t, false, out["approved"], "Decline answers approved: false")
	})

	t.Run("an ask form from the schema", func(t *testing.T) {
		script := askScript()
		c := openScripted(t, ctx, e, script, "light")
		c.wait("#ask")
		require.Equal(t, "Ship order 7?", c.text("#ask-message"))
		require.Equal(t, "checkbox", c.attr("#ask-approved", "type"))
		require.Equal(t, []string{"dhl", "ups"}, c.options("#ask-carrier"))
		boxes := c.attrs("#ask-boxes")
		require.Equal(t, "number", boxes["type"])
		require.Equal(t, "1", boxes["step"], "an integer")
		require.Contains(t, boxes, "required")
		require.NotContains(t, c.attrs("#ask-note"), "required")
		require.Equal(t, "ask-note-hint", c.attr("#ask-note", "aria-describedby"))
		require.Equal(t, "Shown to the courier.", c.text("#ask-note-hint"))
		for _, id := range []string{"approved", "carrier", "boxes", "note"} {
			c.wait(`label[for="ask-` + id + `"]`)
		}
		c.do(chromedp.Click(css("#approve"), c.in()))
		c.wait("#ask-boxes:invalid") // required and empty: nothing is sent
		c.do(chromedp.SendKeys(css("#ask-boxes"), "3", c.in()),
			chromedp.Focus(css("#ask-approved"), c.in()), chromedp.KeyEvent(" "),
			chromedp.SetValue(css("#ask-carrier"), "ups", c.in()))
		c.screenshot("mcp-app-ask.png")
		c.requireContrast(askContrast)
		c.do(chromedp.Click(css("#approve"), c.in()))
		c.wait("#status.completed")
		require.Equal(t, map[string]any{"shipped": true}, c.output())
		calls := c.host().Calls
		require.Len(t, calls, 2)
		require.Equal(t, "gorunner_resume_hook", calls[0].Name)
		require.Equal(t, map[string]any{"token": "ship:7", "payload": map[string]any{
			"approved": true, "carrier": "ups", "boxes": float64(3), "note": ""}}, calls[0].Arguments)
		require.Equal(t, "gorunner_get_run", calls[1].Name, "the card follows the run it resumed")
		require.Equal(t, map[string]any{"runId": "r-7", "waitSeconds": float64(30)}, calls[1].Arguments)

		c = openScripted(t, ctx, e, askScript(), "dark")
		c.wait("#ask")
		c.screenshot("mcp-app-ask-dark.png")
		c.requireContrast(askContrast)
		c.do(chromedp.Click(css("#decline"), c.in()))
		c.wait("#status.completed")
		calls = c.host().Calls
		require.Equal(t, map[string]any{"token": "ship:7", "payload": map[string]any{"declined": true, "action": "decline"}},
			calls[0].Arguments, "Decline sends what a declined elicitation sends")
	})

	t.Run("nested steps under their parent", func(t *testing.T) {
		done := map[string]any{"runId": "r-8", "status": "completed", "output": map[string]any{"booked": "fedex"}}
		at := func(s string) string { return "2026-12-01T10:00:" + s + "Z" }
		step := func(path, status, start, end string) map[string]any {
			return map[string]any{"id": path, "status": status, "startedAt": at(start), "finishedAt": at(end)}
		}
		run := map[string]any{"id": "r-8", "workflow": "ship-order", "status": "completed", "startedAt": at("00"), "finishedAt": at("09"),
			"steps": []any{
				step("quotes", "completed", "00", "04"),
				step("quotes/fedex", "completed", "00", "03"),
				map[string]any{"id": "x", "path": "quotes/fedex/ask", "status": "completed", "startedAt": at("01"), "finishedAt": at("03")},
				step("charge-each/3/charge", "completed", "05", "09"),
			}}
		c := openScripted(t, ctx, e, map[string]any{"result": toolResult(done), "run": run, "replies": map[string]any{}}, "light")
		c.wait("#status.completed")
		c.wait(`li[data-path="quotes"] > ol > li[data-path="quotes/fedex"] > ol > li[data-path="quotes/fedex/ask"]`)
		require.Equal(t, "2.0 s", c.text(`li[data-path="quotes/fedex/ask"] .duration`), "path wins over id")
		require.Equal(t, "4.0 s", c.text(`li[data-path="quotes"] > .step-row .duration`))
		c.wait(`li[data-path="charge-each"] > ol > li[data-path="charge-each/3"] > ol > li[data-path="charge-each/3/charge"]`)
		require.Equal(t, "charge-each", c.text(`li[data-path="charge-each"] > .step-row`), "a parent without a record of its own has no status")
		require.Equal(t, "Run r-8 · 9.0 s", c.text("#facts"))
		require.Empty(t, c.host().Calls, "an ended run is not followed")
	})

	t.Run("a failed run and a refused call", func(t *testing.T) {
		failed := toolResult(map[string]any{"runId": "r-9", "status": "failed",
			"error": map[string]any{"code": "HTTP_ERROR", "message": "the carrier answered 503", "step": "book"}})
		failed["isError"] = true
		c := openScripted(t, ctx, e, map[string]any{"result": failed, "replies": map[string]any{}}, "light")
		c.wait("#status.failed")
		require.Equal(t, "Error", c.text("#result-title"))
		require.Equal(t, "HTTP_ERROR: the carrier answered 503 (step book)", c.text("#error"))

		refused := map[string]any{"isError": true, "content": []any{map[string]any{"type": "text",
			"text": `{"error":{"status":400,"code":"VALIDATION_ERROR","message":"the arguments do not match the tool's input schema"}}`}}}
		c = openScripted(t, ctx, e, map[string]any{"result": refused, "replies": map[string]any{}}, "light")
		c.wait("#status.failed")
		require.Equal(t, "refused", c.text("#status"))
		require.Equal(t, "the arguments do not match the tool's input schema", c.text("#error"))
		require.Empty(t, c.host().Calls)
	})

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, requested)
	for _, r := range requested {
		require.True(t, strings.HasPrefix(r, e.url+"/"), "the browser requested %s, outside GoRunner", r)
	}
}

// askScript is a run waiting on a hook whose ask (the object shape of waitingOn.hook)
// has each kind of field, and the replies of a server to the card's calls: the run still
// waiting right after the resume, then completed.
func askScript() map[string]any {
	waiting := map[string]any{"runId": "r-7", "status": "waiting", "waitingOn": map[string]any{"hook": map[string]any{
		"token": "ship:7", "message": "Ship order 7?",
		"schema": map[string]any{"type": "object", "required": []string{"approved", "boxes"}, "properties": map[string]any{
			"approved": map[string]any{"type": "boolean", "title": "Approve"},
			"carrier":  map[string]any{"type": "string", "enum": []string{"dhl", "ups"}, "title": "Carrier"},
			"boxes":    map[string]any{"type": "integer", "title": "Boxes"},
			"note":     map[string]any{"type": "string", "description": "Shown to the courier."},
		}},
	}}}
	done := map[string]any{"runId": "r-7", "status": "completed", "output": map[string]any{"shipped": true}}
	return map[string]any{"result": toolResult(waiting), "replies": map[string]any{
		"gorunner_resume_hook": []any{toolResult(waiting)},
		"gorunner_get_run":     []any{toolResult(done)},
	}}
}

// toolResult is the tool result GoRunner answers envelope with.
func toolResult(envelope map[string]any) map[string]any {
	raw, err := json.Marshal(envelope)
	if err != nil {
		panic(err)
	}
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(raw)}}, "structuredContent": envelope}
}

// askContrast are the texts of the card asking, each with the element it sits on.
var askContrast = map[string]string{
	"#title": "body", "#status": "body", "#facts": "body", "#ask-title": "#ask", "#ask-message": "#ask",
	`label[for="ask-boxes"]`: "#ask", "#ask-note-hint": "#ask", "#ask-boxes": "#ask-boxes",
	"#approve": "#approve", "#decline": "#ask",
}
