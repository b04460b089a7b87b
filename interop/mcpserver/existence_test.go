package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScopedProbesAnswerAsUnknown probes over /mcp, with a token narrowed to tag billing,
// a workflow, run and hook it may not touch and ones that do not exist: each pair of
// answers is the same bytes once the ID or token sent is masked, so a narrowed token cannot
// tell what exists (SPEC §9: on MCP what a token may not touch is not there). Nothing
// reaches the probed run, and an admin is still told that a workflow does not exist.
func TestScopedProbesAnswerAsUnknown(t *testing.T) {
	f := newFixture(t, greetDef, approveDef, billingDef("charge"))
	ctx := context.Background()
	_, err := f.catalog.Create(ctx, []byte(`{"name":"plan","input":{"type":"object"},"steps":[{"id":"done","set":{"ok":true}}]}`))
	require.NoError(t, err) // a draft only
	admin, _ := f.connect("")
	res, got := call(t, admin, "approve", map[string]any{"orderId": "9"})
	require.False(t, res.IsError, text(res))
	theirs := got["runId"].(string)
	require.Eventually(t, func() bool {
		_, err := f.engine.Hook(ctx, "production", "order:9")
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)

	stranger := *f
	stranger.token = f.mint("runs:read:tag=billing", "runs:write:tag=billing")
	s := stranger.openSession(t)
	probe := func(method string, params map[string]any, sent string) string {
		t.Helper()
		res, err := stranger.post(ctx, rpcRequest{header: s.header(), body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}})
		require.NoError(t, err)
		defer res.Body.Close()
		return strings.ReplaceAll(string(readMessage(t, res)), sent, "<sent>")
	}
	const nobody = "0190c0de-0000-7000-8000-000000000000"
	id := func(key string) func(string) map[string]any {
		return func(v string) map[string]any { return map[string]any{key: v} }
	}
	for _, tc := range []struct {
		name           string
		method, tool   string // tool: the tool of a tools/call
		params         func(sent string) map[string]any
		known, unknown string
	}{
		{"list_runs of a published workflow", "tools/call", "gorunner_list_runs", id("workflow"), "greet", "nosuch"},
		{"list_runs of a draft", "tools/call", "gorunner_list_runs", func(w string) map[string]any {
			return map[string]any{"workflow": w, "status": "waiting"}
		}, "plan", "nosuch"},
		{"get_run", "tools/call", "gorunner_get_run", id("runId"), theirs, nobody},
		{"cancel_run", "tools/call", "gorunner_cancel_run", id("runId"), theirs, nobody},
		{"resume_hook", "tools/call", "gorunner_resume_hook", func(tok string) map[string]any {
			return map[string]any{"token": tok, "payload": map[string]any{"ok": true}}
		}, "order:9", "order:nosuch"},
		{"resources/read", "resources/read", "", func(id string) map[string]any {
			return map[string]any{"uri": "gorunner://runs/" + id}
		}, theirs, nobody},
		{"tasks/get", "tasks/get", "", id("taskId"), theirs, nobody},
		{"tasks/result", "tasks/result", "", id("taskId"), theirs, nobody},
		{"tasks/cancel", "tasks/cancel", "", id("taskId"), theirs, nobody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := func(sent string) map[string]any {
				if tc.tool != "" {
					return map[string]any{"name": tc.tool, "arguments": tc.params(sent)}
				}
				return tc.params(sent)
			}
			known := probe(tc.method, params(tc.known), tc.known)
			unknown := probe(tc.method, params(tc.unknown), tc.unknown)
			require.Equal(t, unknown, known)
			require.NotContains(t, known, "approve", "the answer names no workflow")
		})
	}
	require.Equal(t, "waiting", string(f.engineRun(t, theirs).Status), "nothing reached the run")

	res, _ = call(t, admin, "gorunner_list_runs", map[string]any{"workflow": "nosuch"})
	require.True(t, res.IsError, "an admin reads every workflow: no oracle to close")
	require.Contains(t, text(res), "NOT_FOUND")
}
