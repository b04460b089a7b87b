package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// raw sends one request to /mcp with token (none when empty); header pairs are added.
func (f *fixture) raw(token, method, body string, header ...string) *http.Response {
	f.t.Helper()
	return f.rawAt("/mcp", token, method, body, header...)
}

// open initializes a session as token and returns its ID.
func (f *fixture) open(token string) string {
	f.t.Helper()
	res := f.raw(token, "POST", initialize)
	require.Equal(f.t, http.StatusOK, res.StatusCode)
	id := res.Header.Get("Mcp-Session-Id")
	require.NotEmpty(f.t, id)
	res = f.raw(token, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", id)
	require.Equal(f.t, http.StatusAccepted, res.StatusCode)
	return id
}

// rpcBody reads a JSON-RPC answer, sent as JSON or as one SSE event.
func rpcBody(t *testing.T, res *http.Response) map[string]any {
	t.Helper()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(data)
				break
			}
		}
	}
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return out
}

// TestSessionBelongsToItsPrincipal: another principal presenting a session's ID on GET,
// POST and DELETE gets 404 and none of its notifications; the owner keeps the session.
func TestSessionBelongsToItsPrincipal(t *testing.T) {
	f := newFixture(t, greetDef)
	thief := f.mint("admin")
	victim := f.open(f.token)

	stream := f.raw(f.token, "GET", "", "Mcp-Session-Id", victim)
	require.Equal(t, http.StatusOK, stream.StatusCode)
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			events <- sc.Text()
		}
		close(events)
	}()

	for _, c := range []struct{ method, body string }{
		{"GET", ""},
		{"POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{"POST", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Eve"}}}`},
		{"DELETE", ""},
	} {
		res := f.raw(thief, c.method, c.body, "Mcp-Session-Id", victim)
		require.Equal(t, http.StatusNotFound, res.StatusCode, "%s with another principal's session", c.method)
	}
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs, "the hijacked call started nothing")

	res := f.raw(f.token, "POST", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, "Mcp-Session-Id", victim)
	require.Equal(t, http.StatusOK, res.StatusCode, "the owner's session survived the foreign DELETE")
	publish(t, f.catalog, strings.Replace(greetDef, `"name":"greet"`, `"name":"greet2"`, 1))
	require.Eventually(t, func() bool {
		select {
		case line := <-events:
			return strings.Contains(line, "notifications/tools/list_changed")
		default:
			return false
		}
	}, 5*time.Second, 10*time.Millisecond, "the owner's stream still gets its notifications")

	own := f.open(thief)
	require.NotEqual(t, victim, own)
	require.Equal(t, http.StatusOK, f.raw(thief, "POST", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, "Mcp-Session-Id", own).StatusCode)
	require.Equal(t, http.StatusNotFound, f.raw(f.token, "POST", `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, "Mcp-Session-Id", own).StatusCode)
}

// TestOriginIsChecked: a browser request from another origin is 403 (DNS rebinding, a
// page calling a local server); the public URL's origin, an allowed origin and a request
// without Origin pass.
func TestOriginIsChecked(t *testing.T) {
	f := newFixtureConfig(t, &mcpserver.Config{AllowedOrigins: []string{"https://app.example/"}}, greetDef)
	for _, c := range []struct {
		origin string
		status int
	}{
		{"http://evil.example", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"http://127.0.0.1:1", http.StatusForbidden},
		{f.srv.URL, http.StatusOK},
		{"https://APP.example:443", http.StatusOK},
		{"", http.StatusOK},
	} {
		res := f.raw(f.token, "POST", initialize, "Origin", c.origin)
		require.Equal(t, c.status, res.StatusCode, "Origin %q", c.origin)
	}
}

// TestInvalidUTF8IsRefused: a tool call with invalid UTF-8 in its arguments is a
// VALIDATION_ERROR tool result and starts nothing; another request is a JSON-RPC error.
func TestInvalidUTF8IsRefused(t *testing.T) {
	f := newFixture(t, greetDef)
	id := f.open(f.token)
	res := f.raw(f.token, "POST", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"greet\",\"arguments\":{\"name\":\"Ada\xff\",\"idempotencyKey\":\"k1\"}}}", "Mcp-Session-Id", id)
	require.Equal(t, http.StatusOK, res.StatusCode)
	body := rpcBody(t, res)
	require.Equal(t, float64(7), body["id"])
	result := body["result"].(map[string]any)
	require.Equal(t, true, result["isError"])
	require.Contains(t, result["content"].([]any)[0].(map[string]any)["text"], "VALIDATION_ERROR")
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs)

	res = f.raw(f.token, "POST", "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/read\",\"params\":{\"uri\":\"gorunner://runs/\xc0\"}}", "Mcp-Session-Id", id)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	body = rpcBody(t, res)
	require.Equal(t, float64(-32700), body["error"].(map[string]any)["code"])

	res = f.raw(f.token, "POST", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada","idempotencyKey":"k1"}}}`, "Mcp-Session-Id", id)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotEqual(t, true, rpcBody(t, res)["result"].(map[string]any)["isError"], "the key was not taken by the refused call")
}

// TestHostHeaderNotReflectedInMetadata: the 401 challenge and the resource metadata name
// the public URL, whatever Host the request says.
func TestHostHeaderNotReflectedInMetadata(t *testing.T) {
	f := newFixture(t)
	res := f.raw("", "POST", initialize, "Host", "evil.example")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	challenge := res.Header.Get("WWW-Authenticate")
	require.Contains(t, challenge, `resource_metadata="`+f.srv.URL+mcpserver.MetadataPath+`"`)
	require.NotContains(t, challenge, "evil.example")

	req, err := http.NewRequest("GET", f.srv.URL+mcpserver.MetadataPath, nil)
	require.NoError(t, err)
	req.Host = "evil.example"
	meta, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer meta.Body.Close()
	raw, err := io.ReadAll(meta.Body)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "evil.example")
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, f.srv.URL+"/mcp", doc["resource"])
}

// TestWaitsPerPrincipalOverMCP: with all of the principal's waits taken, a workflow tool
// call is RATE_LIMITED before it starts anything, and so is gorunner_get_run with
// waitSeconds; once a wait is free the call goes through.
func TestWaitsPerPrincipalOverMCP(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("")
	releases := make([]func(), runner.MaxWaitsPerPrincipal)
	for i := range releases {
		var err error
		releases[i], err = f.engine.ReserveWait(f.principal)
		require.NoError(t, err)
	}
	res, _ := call(t, s, "greet", map[string]any{"name": "Ada"})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "RATE_LIMITED")
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs, "a refused call starts no run")
	res, _ = call(t, s, "gorunner_get_run", map[string]any{"runId": "r1", "waitSeconds": 5})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "RATE_LIMITED")

	releases[0]()
	res, got := call(t, s, "greet", map[string]any{"name": "Ada"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", got["status"])
	for _, release := range releases[1:] {
		release()
	}
}

// TestInvalidUTF8IsRefusedOverStdio: over stdio too, a tools/call that is not UTF-8 is a
// VALIDATION_ERROR tool error and starts nothing; another request is a parse error; the
// session goes on.
func TestInvalidUTF8IsRefusedOverStdio(t *testing.T) {
	f := newFixture(t, greetDef)
	c := f.stdio(t)
	c.initialize(t, nil)

	_, err := c.w.Write([]byte("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"greet\",\"arguments\":{\"name\":\"Ada\xff\"}}}\n"))
	require.NoError(t, err)
	result := c.next(t, byID(2))["result"].(map[string]any)
	require.Equal(t, true, result["isError"])
	require.Contains(t, result["content"].([]any)[0].(map[string]any)["text"], "VALIDATION_ERROR")
	_, err = c.w.Write([]byte("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{\"uri\":\"gorunner://runs/\xc0\"}}\n"))
	require.NoError(t, err)
	require.Equal(t, float64(-32700), c.next(t, byID(3))["error"].(map[string]any)["code"])
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs)

	c.send(t, map[string]any{"id": 4, "method": "tools/call", "params": map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}})
	require.NotEqual(t, true, c.next(t, byID(4))["result"].(map[string]any)["isError"])
}
