package runcard_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
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
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	q := url.Values{"token": {e.token}, "tool": {tool}, "args": {string(raw)}, "theme": {theme}}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(e.url+"/host/host.html?"+q.Encode())))
	c := &card{t: t, ctx: ctx}
	require.Eventually(t, func() bool {
		h := c.host()
		require.Empty(t, h.Errors, "the host page failed")
		return h.Ready
	}, 30*time.Second, 20*time.Millisecond, "the card initializes with the host")
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(css("#card")))
	require.NoError(t, err)
	c.frame = nodes[0]
	return c
}

func (c *card) host() hostState {
	c.t.Helper()
	raw, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`JSON.stringify(window.host || {})`))
	require.NoError(c.t, err)
	var h hostState
	require.NoError(c.t, json.Unmarshal([]byte(raw), &h))
	return h
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
		calls := c.calls()
		require.NotEmpty(t, calls)
		for _, name := range calls {
			require.Equal(t, "gorunner_get_run", name)
		}
		c.screenshot("mcp-app-run-dark.png")
	})

	t.Run("an approval given from the form", func(t *testing.T) {
		c := open(t, ctx, e, "approval", map[string]any{"requestId": "R-1"}, "light")
		c.wait("#ask")
		require.Equal(t, "Waiting for approval:R-1", c.text("#ask-title"))
		c.answer()
		c.screenshot("mcp-app-approval.png")
		c.do(chromedp.Click(css("#approve"), c.in()))
		c.wait("#status.completed")
		require.Equal(t, map[string]any{"requestId": "R-1", "approved": true, "by": "Ada"}, c.output())
		require.Contains(t, c.calls(), "gorunner_resume_hook")
	})

	t.Run("an approval declined", func(t *testing.T) {
		c := open(t, ctx, e, "approval", map[string]any{"requestId": "R-2"}, "dark")
		c.wait("#ask")
		c.screenshot("mcp-app-approval-dark.png")
		c.do(chromedp.Click(css("#decline"), c.in()))
		c.wait("#status.completed")
		out := c.output()
		require.Equal(t, false, out["approved"], "Decline answers approved: false")
	})

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, requested)
	for _, r := range requested {
		require.True(t, strings.HasPrefix(r, e.url+"/"), "the browser requested %s, outside GoRunner", r)
	}
}
