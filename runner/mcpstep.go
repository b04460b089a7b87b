package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/schemas"
)

// CodeMCPToolError is the code of an mcp step whose tool answered isError.
const CodeMCPToolError = "MCP_TOOL_ERROR"

// runMCP calls one tool of another MCP server (SPEC §2) over the server's session, kept
// for the steps that follow (mcpSessions). The stepId goes as idempotencyKey when the
// tool's input schema has that property, so a retry after a crash replays on a server that
// honours it (GoRunner does). A transport error, a 429 or a 5xx is retried under retry;
// another 4xx, a JSON-RPC error, an egress refusal, a connection not bound to the URL's
// host and a tool answering isError fail the step at once.
func runMCP(ctx context.Context, s *stepExec) (outcome, error) {
	var ms schemas.MCPStep
	if err := s.eval(s.st.MCP, &ms); err != nil {
		return outcome{}, err
	}
	u, err := url.Parse(ms.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return outcome{}, permanent(CodeInvalidStep, "step %q: url %q is not an absolute http(s) URL", s.st.ID, ms.URL)
	}
	cred, err := s.credential(ctx, ms.Connection, u)
	if err != nil {
		return outcome{}, err
	}
	timeout := httpTimeout(s.st.Timeout.Std(), s.engine().cfg.maxHTTPTimeout)
	runCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res *mcp.CallToolResult
	s.engine().withoutSlot(runCtx, s.run().ID, func() {
		res, err = s.callTool(ctx, u, ms, cred)
	})
	if err != nil {
		return outcome{}, mcpError(ctx, u, ms.Tool, err, timeout)
	}
	if res.IsError {
		return outcome{}, permanent(CodeMCPToolError, "tool %q of %s: %s", ms.Tool, u.Redacted(), truncate(toolText(res), 500))
	}
	// bounded as http bodies are: the response's body was read up to MaxResponseBody
	return outcome{output: map[string]any{"structuredContent": res.StructuredContent, "content": res.Content}}, nil
}

// callTool makes the call over the server's session, the stepId added as idempotencyKey
// when the tool takes one and the step does not set it. A transport failure drops the
// session, so that the retry opens a new one.
func (s *stepExec) callTool(ctx context.Context, u *url.URL, ms schemas.MCPStep, cred *Credential) (*mcp.CallToolResult, error) {
	pool := s.engine().mcp
	sess, err := pool.session(ctx, s.engine().client, u, ms.Connection, cred)
	if err != nil {
		return nil, err
	}
	defer pool.release(sess)
	tool, err := sess.tool(ctx, ms.Tool, s.engine().now())
	if err != nil {
		return nil, err
	}
	args := maps.Clone(ms.Arguments)
	if _, takes := tool.InputSchema.Properties[idempotencyKeyArg]; takes {
		if _, set := args[idempotencyKeyArg]; !set {
			if args == nil {
				args = map[string]any{}
			}
			args[idempotencyKeyArg] = s.rec.StepID
		}
	}
	res, err := sess.client.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: ms.Tool, Arguments: args}})
	if err != nil {
		pool.dropIfBroken(sess, err)
	}
	return res, err
}

// idempotencyKeyArg is the argument a GoRunner workflow tool (and any server following its
// convention) takes its idempotency key in.
const idempotencyKeyArg = "idempotencyKey"

// errNoSuchTool is a tool the server does not list.
var errNoSuchTool = errors.New("the server lists no such tool")

// statusRE finds the HTTP status in mcp-go's transport errors, which carry it in text only.
var statusRE = regexp.MustCompile(`status (\d{3})`)

// mcpError classifies a failed call as runMCP says.
func mcpError(ctx context.Context, u *url.URL, tool string, err error, timeout time.Duration) error {
	where := fmt.Sprintf("tool %q of %s", tool, u.Redacted())
	var denied *EgressError
	var te *transport.Error
	switch {
	case errors.As(err, &denied):
		return permanent(CodeEgressDenied, "%s: %v", where, denied)
	case errors.Is(err, errBodyTooLarge):
		return permanent(CodeResponseTooLarge, "%s: %v", where, errBodyTooLarge)
	case errors.Is(err, errNoSuchTool):
		return permanent(CodeNotFound, "%s: %v", where, err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return retryable(CodeTimeout, "%s: no answer within %s", where, timeout)
	case !errors.As(err, &te):
		return permanent(CodeStep, "%s: %v", where, err) // the server's JSON-RPC error
	}
	if m := statusRE.FindStringSubmatch(err.Error()); m != nil {
		code, _ := strconv.Atoi(m[1])
		if code < 500 && code != 429 {
			return permanent(CodeHTTP, "%s: %s", where, truncate(err.Error(), 300))
		}
		return retryable(CodeHTTP, "%s: %s", where, truncate(err.Error(), 300))
	}
	return retryable(CodeNetwork, "%s: %v", where, err)
}

// toolText is the text content of a tool result, what an isError result says.
func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
