package runner_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// listingRemote is an MCP server whose tool "echo" an mcp step calls; it counts the
// tools/list requests and the GET streams opened, records each call's arguments, and
// sends ttlMs on its lists when ttl is set.
type listingRemote struct {
	*httptest.Server
	mcp     *server.MCPServer
	mu      sync.Mutex
	lists   int
	streams int
	calls   []map[string]any
}

func newListingRemote(t *testing.T, ttl *int64) *listingRemote {
	r := &listingRemote{}
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if ttl != nil {
			res.SetCacheHints(*ttl, mcp.CacheScopePrivate)
		}
	})
	r.mcp = server.NewMCPServer("listing", "1", server.WithToolCapabilities(true), server.WithHooks(hooks))
	r.addEcho()
	h := server.NewStreamableHTTPServer(r.mcp)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		if bytes.Contains(body, []byte(`"method":"tools/list"`)) {
			r.lists++
		}
		if req.Method == http.MethodGet {
			r.streams++
		}
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(func() { r.CloseClientConnections(); r.Close() }) // ends the sessions' GET streams
	return r
}

// addEcho adds (or replaces, announcing list_changed) the tool echo, taking an
// idempotencyKey when asked.
func (r *listingRemote) addEcho(opts ...mcp.ToolOption) {
	opts = append([]mcp.ToolOption{mcp.WithString("text")}, opts...)
	r.mcp.AddTool(mcp.NewTool("echo", opts...), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r.mu.Lock()
		r.calls = append(r.calls, req.GetArguments())
		r.mu.Unlock()
		return mcp.NewToolResultText("ok"), nil
	})
}

func (r *listingRemote) counts() (lists, streams int, calls []map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists, r.streams, append([]map[string]any(nil), r.calls...)
}

// TestMCPToolListTTL: the tool list is read again once its ttlMs has passed (at once for
// 0), after MCPToolsTTL when the server sends none or a longer one, and not before.
func TestMCPToolListTTL(t *testing.T) {
	ms := func(d time.Duration) *int64 { v := d.Milliseconds(); return &v }
	tests := []struct {
		name    string
		ttl     *int64
		advance time.Duration // between the two runs
		lists   int
	}{
		{name: "no ttlMs, within MCPToolsTTL", advance: time.Minute, lists: 1},
		{name: "no ttlMs, past MCPToolsTTL", advance: runner.MCPToolsTTL, lists: 2},
		{name: "within ttlMs", ttl: ms(time.Second), advance: 500 * time.Millisecond, lists: 1},
		{name: "past ttlMs", ttl: ms(time.Second), advance: 2 * time.Second, lists: 2},
		{name: "ttlMs 0: stale at once", ttl: ms(0), lists: 2},
		{name: "a ttlMs over MCPToolsTTL is cut to it", ttl: ms(time.Hour), advance: runner.MCPToolsTTL, lists: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			e := h.engine(runner.Config{})
			remote := newListingRemote(t, tt.ttl)
			name := mcpWorkflow(h, "ttl", remote.URL+"/mcp", "echo", `      arguments: {text: hi}`)
			h.run(e, name, `{}`, runner.StatusCompleted)
			h.clock.Advance(tt.advance)
			h.run(e, name, `{}`, runner.StatusCompleted)
			lists, _, calls := remote.counts()
			require.Equal(t, tt.lists, lists)
			require.Len(t, calls, 2)
		})
	}
}

// TestMCPToolListChanged: a server's notifications/tools/list_changed drops its cached
// list, so the step after it sees the tool's new input schema (here: it now takes an
// idempotencyKey, which the step then sends) well within MCPToolsTTL.
func TestMCPToolListChanged(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	remote := newListingRemote(t, nil)
	name := mcpWorkflow(h, "changed", remote.URL+"/mcp", "echo", `      arguments: {text: hi}`)
	h.run(e, name, `{}`, runner.StatusCompleted)
	h.run(e, name, `{}`, runner.StatusCompleted)
	lists, _, calls := remote.counts()
	require.Equal(t, 1, lists, "the list is cached")
	require.NotContains(t, calls[1], "idempotencyKey")
	// the session's GET stream is open, so the notification has a way to the client
	require.Eventually(t, func() bool { _, streams, _ := remote.counts(); return streams > 0 }, 5*time.Second, 10*time.Millisecond)

	remote.addEcho(mcp.WithString("idempotencyKey")) // sends list_changed

	var r *runner.Run
	require.Eventually(t, func() bool {
		r = h.run(e, name, `{}`, runner.StatusCompleted)
		_, _, calls := remote.counts()
		return calls[len(calls)-1]["idempotencyKey"] == step(r, "call").StepID
	}, 5*time.Second, 20*time.Millisecond)
	lists, _, _ = remote.counts()
	require.Equal(t, 2, lists, "read again once, after the notification")
}
