package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// mcpRemote is an MCP server (mcp-go, streamable HTTP) an mcp step calls: lookup takes an
// idempotencyKey, plain does not, broken answers isError, huge answers more than
// MaxResponseBody. It records the arguments of each call, the Authorization header of each
// request and the sessions opened, and fails the next tool calls with 503 while fail5xx > 0.
type mcpRemote struct {
	*httptest.Server
	mu       sync.Mutex
	calls    []map[string]any
	auths    []string
	sessions int
	closed   int // sessions the client ended (DELETE)
	fail5xx  int
}

func newMCPRemote(t *testing.T) *mcpRemote {
	r := &mcpRemote{}
	s := server.NewMCPServer("remote", "1", server.WithToolCapabilities(false))
	record := func(answer func(args map[string]any) *mcp.CallToolResult) server.ToolHandlerFunc {
		return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.mu.Lock()
			r.calls = append(r.calls, req.GetArguments())
			r.mu.Unlock()
			return answer(req.GetArguments()), nil
		}
	}
	s.AddTool(mcp.NewTool("lookup", mcp.WithString("customer"), mcp.WithString("idempotencyKey")),
		record(func(args map[string]any) *mcp.CallToolResult {
			return mcp.NewToolResultStructured(map[string]any{"customer": args["customer"], "tier": "gold"}, "found")
		}))
	s.AddTool(mcp.NewTool("plain", mcp.WithString("text")), record(func(args map[string]any) *mcp.CallToolResult {
		return mcp.NewToolResultText(fmt.Sprint(args["text"]))
	}))
	s.AddTool(mcp.NewTool("broken"), record(func(map[string]any) *mcp.CallToolResult {
		return mcp.NewToolResultError("no such customer")
	}))
	s.AddTool(mcp.NewTool("huge"), record(func(map[string]any) *mcp.CallToolResult {
		return mcp.NewToolResultText(strings.Repeat("x", runner.MaxResponseBody+1))
	}))
	h := server.NewStreamableHTTPServer(s)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			r.sessions++
		}
		if req.Method == http.MethodDelete {
			r.closed++
		}
		fail := bytes.Contains(body, []byte(`"method":"tools/call"`)) && r.fail5xx > 0
		if fail {
			r.fail5xx--
		}
		r.mu.Unlock()
		if fail {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(func() { r.CloseClientConnections(); r.Close() }) // ends the sessions' GET streams
	return r
}

func (r *mcpRemote) closedSessions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *mcpRemote) seen() (calls []map[string]any, auths []string, sessions int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.calls...), append([]string(nil), r.auths...), r.sessions
}

// mcpWorkflow defines a workflow of one mcp step calling tool at url, with extra lines.
func mcpWorkflow(h *harness, name, url, tool, extra string) string {
	return h.define(fmt.Sprintf(`
name: %s
input: {type: object}
steps:
  - id: call
    mcp:
      url: "%s"
      tool: %s
%s
    retry: {initialInterval: 1ms, maxInterval: 2ms}
`, name, url, tool, extra))
}

// TestMCPStep: arguments from expressions, the stepId as idempotencyKey for the tool that
// takes one (and not for the one that does not), the connection's token sent, and one
// session for the steps of the run.
func TestMCPStep(t *testing.T) {
	h := newHarness(t)
	h.creds = bearer{"crm": bearerToken("crm-token", "127.0.0.1")}
	e := h.engine(runner.Config{})
	remote := newMCPRemote(t)
	name := h.define(fmt.Sprintf(`
name: chain
input: {type: object}
steps:
  - id: find
    mcp:
      url: "%[1]s/mcp"
      tool: lookup
      connection: crm
      arguments: {customer: "${{ input.customer }}"}
  - id: note
    mcp:
      url: "%[1]s/mcp"
      tool: plain
      connection: crm
      arguments: {text: "tier ${{ steps.find.output.structuredContent.tier }}"}
`, remote.URL))
	r := h.run(e, name, `{"customer": "c-42"}`, runner.StatusCompleted)

	calls, auths, sessions := remote.seen()
	require.Equal(t, []map[string]any{
		{"customer": "c-42", "idempotencyKey": step(r, "find").StepID},
		{"text": "tier gold"},
	}, calls)
	require.Equal(t, 1, sessions, "one session serves the steps")
	for _, a := range auths {
		require.Equal(t, "Bearer crm-token", a)
	}
	out := jsonOf(t, r.Output).(map[string]any)
	require.Equal(t, []any{map[string]any{"type": "text", "text": "tier gold"}}, out["content"])
	find := jsonOf(t, step(r, "find").Output).(map[string]any)
	require.Equal(t, map[string]any{"customer": "c-42", "tier": "gold"}, find["structuredContent"])
}

// TestMCPStepFailures: what fails an mcp step, and how often it was tried.
func TestMCPStepFailures(t *testing.T) {
	tests := []struct {
		name, tool, extra string
		egress            []string // allow rules; nil: loopback allowed
		code              string
		attempts, calls   int
		fail5xx           int
		status            runner.Status
	}{
		{name: "isError fails at once with the tool's text", tool: "broken", code: runner.CodeMCPToolError, attempts: 1, calls: 1, status: runner.StatusFailed},
		{name: "a result over the bound", tool: "huge", code: runner.CodeResponseTooLarge, attempts: 1, calls: 1, status: runner.StatusFailed},
		{name: "a tool the server lacks", tool: "nope", code: runner.CodeNotFound, attempts: 1, status: runner.StatusFailed},
		{name: "5xx is retried", tool: "plain", fail5xx: 2, attempts: 3, calls: 1, status: runner.StatusCompleted},
		{name: "5xx exhausts the attempts", tool: "plain", fail5xx: 3, code: runner.CodeHTTP, attempts: 3, status: runner.StatusFailed},
		{name: "a private address without an allow rule", tool: "plain", egress: []string{}, code: runner.CodeEgressDenied, attempts: 1, status: runner.StatusFailed},
		{name: "a connection bound to other hosts", tool: "plain", extra: "      connection: elsewhere", code: runner.CodeHostMismatch, attempts: 1, status: runner.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.creds = bearer{"elsewhere": bearerToken("secret", "api.example.com")}
			cfg := runner.Config{}
			if tt.egress != nil {
				cfg.Egress = policy(t, tt.egress...)
			}
			e := h.engine(cfg)
			remote := newMCPRemote(t)
			remote.fail5xx = tt.fail5xx
			r := h.run(e, mcpWorkflow(h, "failing", remote.URL+"/mcp", tt.tool, tt.extra), `{}`, tt.status)
			require.Equal(t, tt.attempts, step(r, "call").Attempts)
			calls, auths, _ := remote.seen()
			require.Len(t, calls, tt.calls)
			require.NotContains(t, auths, "Bearer secret", "a connection's token goes to its hosts only")
			if tt.status == runner.StatusFailed {
				require.Equal(t, tt.code, r.Error.Code, r.Error.Message)
			}
			if tt.code == runner.CodeMCPToolError {
				require.Contains(t, r.Error.Message, "no such customer")
			}
		})
	}
}

// TestMCPSessionsReusedThenClosedWhenIdle: the runs of one process share a server's
// session; once no step used it for the idle time it is closed, and the next step opens a
// new one.
func TestMCPSessionsReusedThenClosedWhenIdle(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	remote := newMCPRemote(t)
	name := mcpWorkflow(h, "reuse", remote.URL+"/mcp", "plain", `      arguments: {text: hi}`)
	h.run(e, name, `{}`, runner.StatusCompleted)
	h.run(e, name, `{}`, runner.StatusCompleted)
	_, _, sessions := remote.seen()
	require.Equal(t, 1, sessions, "the second run reuses the session")
	require.Zero(t, remote.closedSessions())

	runner.SetMCPSessionIdle(e, 50*time.Millisecond) // from the next release on
	h.run(e, name, `{}`, runner.StatusCompleted)

	require.Eventually(t, func() bool { return remote.closedSessions() == 1 }, 5*time.Second, 10*time.Millisecond)
	h.run(e, name, `{}`, runner.StatusCompleted)
	_, _, sessions = remote.seen()
	require.Equal(t, 2, sessions, "past the idle time, a new session")
	calls, _, _ := remote.seen()
	require.Len(t, calls, 4)
}

// TestMCPToolPagesBounded: a step finds its tool on any of the first MCPMaxToolPages pages
// of a server that lists one tool a page, and a tool past them is no such tool (a server
// paging without end cannot keep a step reading).
func TestMCPToolPagesBounded(t *testing.T) {
	s := server.NewMCPServer("pages", "1", server.WithToolCapabilities(false), server.WithPaginationLimit(1))
	for i := range runner.MCPMaxToolPages + 1 {
		s.AddTool(mcp.NewTool(fmt.Sprintf("tool-%02d", i)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}
	remote := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(func() { remote.CloseClientConnections(); remote.Close() })
	h := newHarness(t)
	e := h.engine(runner.Config{})
	for _, tc := range []struct {
		tool   string
		status runner.Status
	}{
		{fmt.Sprintf("tool-%02d", runner.MCPMaxToolPages-1), runner.StatusCompleted},
		{fmt.Sprintf("tool-%02d", runner.MCPMaxToolPages), runner.StatusFailed},
	} {
		name := h.define(fmt.Sprintf("name: %s\ninput: {type: object}\nsteps:\n  - id: call\n    mcp: {url: \"%s/mcp\", tool: %s}\n",
			tc.tool, remote.URL, tc.tool))
		r := h.run(e, name, `{}`, tc.status)
		if tc.status == runner.StatusFailed {
			require.Equal(t, runner.CodeNotFound, r.Error.Code, "%+v", r.Error)
		}
	}
}
