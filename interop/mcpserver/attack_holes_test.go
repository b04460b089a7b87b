package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/tools"
)

// toolsList is a tools/list request with id.
func toolsList(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id)
}

// TestAttackTerminatedSessionAnswers404 performs issue #27's item 6: after its DELETE a
// session's ID answered tools/list with 200, and so did the oldest session after the
// principal's MaxSessionsPerPrincipal+1st initialize. A terminated session answers 404 on
// every method, the task methods included; the live ones keep working.
func TestAttackTerminatedSessionAnswers404(t *testing.T) {
	f := newFixture(t, greetDef)
	requireEnded := func(id, why string) {
		t.Helper()
		for _, c := range []struct{ method, body string }{
			{"POST", toolsList(2)},
			{"POST", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Eve"}}}`},
			{"POST", `{"jsonrpc":"2.0","id":4,"method":"tasks/list"}`},
			{"GET", ""},
			{"DELETE", ""},
		} {
			res := f.raw(f.token, c.method, c.body, "Mcp-Session-Id", id)
			require.Equal(t, http.StatusNotFound, res.StatusCode, "%s %s of a session %s", c.method, c.body, why)
		}
	}

	deleted := f.open(f.token)
	require.Equal(t, http.StatusOK, f.raw(f.token, "POST", toolsList(1), "Mcp-Session-Id", deleted).StatusCode)
	require.Equal(t, http.StatusOK, f.raw(f.token, "DELETE", "", "Mcp-Session-Id", deleted).StatusCode)
	requireEnded(deleted, "deleted")

	oldest := f.open(f.token)
	var newest string
	for range mcpserver.MaxSessionsPerPrincipal {
		res := f.raw(f.token, "POST", initialize)
		require.Equal(t, http.StatusOK, res.StatusCode)
		_, _ = io.Copy(io.Discard, res.Body)
		newest = res.Header.Get("Mcp-Session-Id")
	}
	requireEnded(oldest, "evicted past MaxSessionsPerPrincipal")
	require.Equal(t, http.StatusOK, f.raw(f.token, "POST", toolsList(5), "Mcp-Session-Id", newest).StatusCode)

	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs, "no call of an ended session started a run")

	other := f.twin()
	require.Equal(t, http.StatusNotFound, other.raw(f.token, "POST", toolsList(6), "Mcp-Session-Id", newest).StatusCode,
		"another process does not hold the session (docs/operations.md: Load balancer and /mcp)")
}

// callWithProgressToken is a tools/call of greet whose _meta.progressToken is token (JSON).
func callWithProgressToken(token string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ann"},"_meta":{"progressToken":` + token + `}}}`
}

// TestAttackHugeProgressToken performs issue #27's item 5: a 0.9 MB _meta.progressToken was
// echoed in every progress notification of the call. A progressToken that is not a string
// or a number, or a string past MaxProgressTokenLength, is refused with a VALIDATION_ERROR
// naming it, before any run starts; a short string or a number gets its progress.
func TestAttackHugeProgressToken(t *testing.T) {
	f := newFixture(t, greetDef)
	session := f.open(f.token)
	quoted := func(s string) string {
		raw, err := json.Marshal(s)
		require.NoError(t, err)
		return string(raw)
	}
	for _, tc := range []struct{ name, token, why string }{
		{"0.9 MB string", quoted(strings.Repeat("p", 900_000)), "at most"},
		{"one past the bound", quoted(strings.Repeat("p", mcpserver.MaxProgressTokenLength+1)), "at most"},
		{"object", `{"a":"b"}`, "a string or a number"},
		{"array", `["a"]`, "a string or a number"},
		{"boolean", `true`, "a string or a number"},
	} {
		res := f.raw(f.token, "POST", callWithProgressToken(tc.token), "Mcp-Session-Id", session)
		require.Equal(t, http.StatusOK, res.StatusCode, tc.name)
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Less(t, len(raw), 4096, "%s: the answer does not echo the token", tc.name)
		body := string(raw)
		require.Contains(t, body, `"isError":true`, tc.name)
		require.Contains(t, body, "VALIDATION_ERROR", tc.name)
		require.Contains(t, body, "/_meta/progressToken", tc.name)
		require.Contains(t, body, tc.why, tc.name)
	}
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs, "a refused call starts nothing")

	for _, token := range []string{quoted(strings.Repeat("p", mcpserver.MaxProgressTokenLength)), `42`, `"t-1"`} {
		res := f.raw(f.token, "POST", callWithProgressToken(token), "Mcp-Session-Id", session)
		require.Equal(t, http.StatusOK, res.StatusCode)
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NotContains(t, string(raw), `"isError":true`, token)
		require.Contains(t, string(raw), "notifications/progress", "progress is reported under %s", token)
	}
}

// TestAttackHugeFindQuery performs issue #27's item 4 over many workflows: a 900 KB query of
// 180,000 words took 4.1 s of CPU a call. A query past tools.MaxQueryLength characters, or
// of more than tools.MaxQueryWords distinct words, is an invalid argument naming /query;
// a query at the bounds, its words repeated as often as fit, finds what it names.
func TestAttackHugeFindQuery(t *testing.T) {
	f := newFixtureConfig(t, &mcpserver.Config{PageSize: mcpserver.DefaultPageSize}, scaleDefs(500)...)
	s, _ := f.connect("?tools=search")
	words := make([]string, 180_000)
	for i := range words {
		words[i] = fmt.Sprintf("w%03d", i%1000)
	}
	distinct := make([]string, tools.MaxQueryWords+1)
	for i := range distinct {
		distinct[i] = fmt.Sprintf("word%d", i)
	}
	for name, query := range map[string]string{
		"900 KB":              strings.Join(words, " "),
		"one past the length": strings.Repeat("w", tools.MaxQueryLength+1),
		"one word too many":   strings.Join(distinct, " "),
	} {
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tools.FindWorkflows, Arguments: map[string]any{"query": query}})
		require.NoError(t, err, name)
		require.True(t, res.IsError, name)
		require.Contains(t, text(res), "/query", name)
		require.Contains(t, text(res), "VALIDATION_ERROR", name)
	}

	repeated := strings.TrimSpace(strings.Repeat("wf 00042 ", tools.MaxQueryLength/len("wf 00042 ")))
	_, found := call(t, s, tools.FindWorkflows, map[string]any{"query": repeated})
	list := found["workflows"].([]any)
	require.NotEmpty(t, list)
	require.Equal(t, "wf-00042", list[0].(map[string]any)["name"], "the workflow the words name comes first")
	_, found = call(t, s, tools.FindWorkflows, map[string]any{"query": strings.Join(distinct[:tools.MaxQueryWords], " ")})
	require.Empty(t, found["workflows"], "MaxQueryWords distinct words are a query")
}

// openAt initializes a session as f's token negotiating protocol version v, and returns
// its ID.
func (f *fixture) openAt(t *testing.T, v string) string {
	t.Helper()
	res := f.raw(f.token, "POST", strings.Replace(initialize, "2025-11-25", v, 1), "Mcp-Protocol-Version", "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	id := res.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	res = f.raw(f.token, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "")
	require.Equal(t, http.StatusAccepted, res.StatusCode)
	return id
}

// rpcError is the JSON-RPC error code of an answer, 0 for none.
func rpcErrorCode(t *testing.T, res *http.Response) float64 {
	t.Helper()
	e, _ := rpcBody(t, res)["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

// TestAttackBatchOverHTTP performs issue #27's item 9: a JSON-RPC batch array got a parse
// error (-32700). A batch is answered as its protocol version says: refused as an Invalid
// Request (-32600) where MCP does not allow batches (every version but 2025-03-26: by the
// header, else by what the session negotiated), answered message by message in
// 2025-03-26, where it does.
func TestAttackBatchOverHTTP(t *testing.T) {
	f := newFixture(t, greetDef)
	batch := `[` + toolsList(1) + `,` + `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ann"}}}]`
	modern := f.open(f.token)
	for _, tc := range []struct {
		name    string
		session string
		header  string
	}{
		{"a 2025-11-25 session with its header", modern, "2025-11-25"},
		{"a 2025-11-25 session without the header", modern, ""},
		{"a 2025-06-18 header", modern, "2025-06-18"},
		{"a 2026-07-28 request", "", "2026-07-28"},
	} {
		res := f.raw(f.token, "POST", batch, "Mcp-Session-Id", tc.session, "Mcp-Protocol-Version", tc.header)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, tc.name)
		require.Equal(t, float64(-32600), rpcErrorCode(t, res), tc.name)
	}
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs, "a refused batch runs none of its calls")

	old := f.openAt(t, "2025-03-26")
	res := f.raw(f.token, "POST", batch, "Mcp-Session-Id", old, "Mcp-Protocol-Version", "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	var answers []map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&answers))
	require.Len(t, answers, 2)
	byID := map[float64]map[string]any{}
	for _, a := range answers {
		byID[a["id"].(float64)] = a
	}
	require.Contains(t, byID[1]["result"].(map[string]any), "tools")
	call := byID[2]["result"].(map[string]any)
	require.Equal(t, "completed", call["structuredContent"].(map[string]any)["status"])

	tooMany := make([]string, mcpserver.MaxBatchMessages+1)
	for i := range tooMany {
		tooMany[i] = toolsList(i)
	}
	for name, body := range map[string]string{
		"empty":               `[]`,
		"one past the bound":  "[" + strings.Join(tooMany, ",") + "]",
		"holding initialize":  "[" + initialize + "]",
		"of a parse error":    `[{"jsonrpc":`,
		"without its session": batch,
	} {
		session := old
		if name == "without its session" {
			session = ""
		}
		res := f.raw(f.token, "POST", body, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "")
		if session == "" {
			require.Equal(t, http.StatusNotFound, res.StatusCode, name)
			continue
		}
		require.Equal(t, http.StatusBadRequest, res.StatusCode, name)
		want := float64(-32600)
		if name == "of a parse error" {
			want = -32700
		}
		require.Equal(t, want, rpcErrorCode(t, res), name)
	}
	res = f.raw(f.token, "POST", `[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}]`,
		"Mcp-Session-Id", old, "Mcp-Protocol-Version", "")
	require.Equal(t, http.StatusAccepted, res.StatusCode, "a batch of notifications only")
}
