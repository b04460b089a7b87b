package mcpserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

var companions = []string{"gorunner_get_run", "gorunner_list_runs", "gorunner_cancel_run", "gorunner_resume_hook"}

// billingDef is a published workflow tagged billing.
func billingDef(name string) string {
	return `{"name":"` + name + `","tags":["billing"],"input":{"type":"object"},"steps":[{"id":"done","set":{"charged":true}}]}`
}

// mint issues a token with scopes.
func (f *fixture) mint(scopes ...string) string {
	f.t.Helper()
	ss, err := auth.ParseScopes(scopes)
	require.NoError(f.t, err)
	_, secret, err := f.auth.Issue(context.Background(), auth.IssueParams{Name: strings.Join(scopes, " "), Scopes: ss})
	require.NoError(f.t, err)
	return secret
}

// requireNotFound asserts that calling name is answered as a call of a tool that does not
// exist, suggesting none of the forbidden tools.
func requireNotFound(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, forbidden ...string) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	require.True(t, res.IsError, name)
	require.Contains(t, text(res), `there is no tool named \"`+name+`\"`, name)
	for _, f := range forbidden {
		require.NotContains(t, text(res), `\"`+f+`\"`, "a miss never names a tool the token cannot call")
	}
}

// TestToolsFollowScopes: a runs:write:tag=billing token lists only the billing tools and
// cannot call the others, which answer exactly as a tool that does not exist.
func TestToolsFollowScopes(t *testing.T) {
	f := newFixture(t, greetDef, approveDef, billingDef("charge"), billingDef("refund"))
	billing, _ := f.connectAs(f.mint("runs:write:tag=billing"), "")
	require.ElementsMatch(t, append([]string{"charge", "refund"}, companions...), keysOf(listTools(t, billing)))
	res, got := call(t, billing, "charge", map[string]any{})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", got["status"])
	requireNotFound(t, billing, "greet", map[string]any{"name": "Ada"}, "approve")
	requireNotFound(t, billing, "greett", map[string]any{}, "greet")

	_, found := call(t, billing, "gorunner_find_workflows", map[string]any{"query": "greet approve charge"})
	var names []string
	for _, w := range found["workflows"].([]any) {
		names = append(names, w.(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"charge"}, names, "find lists only the workflows the token may call")
	res, _ = call(t, billing, "gorunner_run_workflow", map[string]any{"workflow": "greet", "arguments": map[string]any{"name": "Ada"}})
	require.True(t, res.IsError)
	require.Contains(t, text(res), `there is no workflow named \"greet\"`)
	res, got = call(t, billing, "gorunner_run_workflow", map[string]any{"workflow": "refund", "arguments": map[string]any{}})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", got["status"])

	greeter, _ := f.connectAs(f.mint("runs:write:workflow=greet", "runs:read"), "")
	require.ElementsMatch(t, append([]string{"greet"}, companions...), keysOf(listTools(t, greeter)))
	requireNotFound(t, greeter, "charge", map[string]any{}, "refund")

	reader, _ := f.connectAs(f.mint("runs:read"), "")
	require.ElementsMatch(t, companions, keysOf(listTools(t, reader)), "runs:read calls no workflow tool")
	admin, _ := f.connect("")
	require.Len(t, listTools(t, admin), 4+len(companions)+len(authoringTools), "admin may author")
}

// TestListChangedPerSession: every session is told when tools change (the choice: notify
// all, filter at listing), and a listing never shows a tool the token cannot call.
func TestListChangedPerSession(t *testing.T) {
	f := newFixture(t, billingDef("charge"))
	billing, bev := f.connectAs(f.mint("runs:write:tag=billing"), "")
	admin, aev := f.connect("")
	require.ElementsMatch(t, append([]string{"charge"}, companions...), keysOf(listTools(t, billing)))

	publish(t, f.catalog, greetDef)
	require.Eventually(t, func() bool { return aev.changes() > 0 && bev.changes() > 0 }, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, keysOf(listTools(t, admin)), "greet")
	require.NotContains(t, keysOf(listTools(t, billing)), "greet")

	publish(t, f.catalog, billingDef("refund"))
	require.Eventually(t, func() bool {
		_, ok := listTools(t, billing)["refund"]
		return ok
	}, 5*time.Second, 10*time.Millisecond, "a new billing tool shows up for the billing session")
}

// TestDraftsOverMCPNeedWorkflowsWrite performs the attack of issue 12: another principal's
// unpublished draft run through /mcp?environment=test.
func TestDraftsOverMCPNeedWorkflowsWrite(t *testing.T) {
	f := newFixture(t)
	_, err := f.catalog.Create(context.Background(), []byte(greetDef)) // a draft only
	require.NoError(t, err)

	runner, _ := f.connectAs(f.mint("runs:write", "runs:read"), "?environment=test")
	require.ElementsMatch(t, companions, keysOf(listTools(t, runner)))
	requireNotFound(t, runner, "greet", map[string]any{"name": "Ada"})
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs, "no draft run was started")

	author, _ := f.connectAs(f.mint("runs:write", "workflows:write"), "?environment=test")
	require.Eventually(t, func() bool { _, ok := listTools(t, author)["greet"]; return ok }, time.Second, 10*time.Millisecond)
	res, got := call(t, author, "greet", map[string]any{"name": "Ada"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", got["status"])
}

// TestCompanionsCheckScopes: another principal's run cannot be read, listed, cancelled or
// resumed through the companion tools without the scope (it is not found, as one that does
// not exist); one's own run can be read.
func TestCompanionsCheckScopes(t *testing.T) {
	f := newFixture(t, greetDef, approveDef)
	admin, _ := f.connect("")
	res, got := call(t, admin, "approve", map[string]any{"orderId": "9"})
	require.False(t, res.IsError, text(res))
	theirs := got["runId"].(string)
	require.Eventually(t, func() bool {
		_, err := f.engine.Hook(context.Background(), "production", "order:9")
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)

	other, _ := f.connectAs(f.mint("runs:write:workflow=greet"), "")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"gorunner_get_run", map[string]any{"runId": theirs}},
		{"gorunner_cancel_run", map[string]any{"runId": theirs}},
		{"gorunner_resume_hook", map[string]any{"token": "order:9", "payload": map[string]any{"ok": true}}},
	} {
		res, _ := call(t, other, c.tool, c.args)
		require.True(t, res.IsError, c.tool)
		require.Contains(t, text(res), "NOT_FOUND", "%s: what the token may not touch is not there", c.tool)
		require.NotContains(t, text(res), "approve", "%s names no workflow", c.tool)
	}
	res, got = call(t, other, "greet", map[string]any{"name": "Ada"})
	require.False(t, res.IsError, text(res))
	mine := got["runId"].(string)
	res, got = call(t, other, "gorunner_get_run", map[string]any{"runId": mine})
	require.False(t, res.IsError, "a run is readable by the token that started it: %s", text(res))
	require.Equal(t, "completed", got["status"])
	_, list := call(t, other, "gorunner_list_runs", map[string]any{})
	require.Len(t, list["runs"], 1, "only its own run is listed")

	res, got = call(t, admin, "gorunner_get_run", map[string]any{"runId": theirs})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "waiting", got["status"], "nothing reached the run")
}

// TestAudienceBoundTokens: a token issued for the /mcp resource (as OAuth access tokens
// are) opens MCP sessions and is refused by the REST API.
func TestAudienceBoundTokens(t *testing.T) {
	f := newFixture(t, greetDef)
	_, secret, err := f.auth.Issue(context.Background(), auth.IssueParams{Name: "oauth", Scopes: auth.AdminScopes(), Audience: auth.AudienceMCP})
	require.NoError(t, err)
	s, _ := f.connectAs(secret, "")
	require.Contains(t, keysOf(listTools(t, s)), "greet")
	f.token = secret
	res, _ := f.rest("GET", "/api/runs", nil, http.Header{})
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}
