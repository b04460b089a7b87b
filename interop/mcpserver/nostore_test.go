package mcpserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMCPAnswersAreNotStored: every /mcp answer — JSON-RPC results (tool results hold run
// data), JSON-RPC errors, the transport's 400, 403 and 404, and DELETE — says
// Cache-Control: no-store and Pragma: no-cache, as /api answers do. An event stream keeps
// mcp-go's Cache-Control: no-cache (a stream is not cached) and still says Pragma: no-cache.
// The 401 is not yet covered: api answers it before mcpserver sees the request.
func TestMCPAnswersAreNotStored(t *testing.T) {
	f := newFixture(t, greetDef)
	other := f.mint("admin")
	id := f.open(f.token)
	ended := f.open(f.token)
	sess := []string{"Mcp-Session-Id", id}
	for _, c := range []struct {
		name         string
		token        string
		method, body string
		header       []string
		status       int
		stream       bool   // an event stream: Cache-Control no-cache
		has          string // in the body
	}{
		{name: "initialize", token: f.token, method: "POST", body: initialize, status: http.StatusOK},
		{name: "tools/list", token: f.token, method: "POST", body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, header: sess, status: http.StatusOK},
		{name: "tools/call", token: f.token, method: "POST", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`, header: sess, status: http.StatusOK, has: "hello Ada"},
		{name: "unknown JSON-RPC method", token: f.token, method: "POST", body: `{"jsonrpc":"2.0","id":4,"method":"no/such"}`, header: sess, status: http.StatusOK, has: "-32601"},
		{name: "invalid UTF-8", token: f.token, method: "POST", body: "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\xff\"}}", header: sess, status: http.StatusBadRequest},
		{name: "unknown protocol version", token: f.token, method: "POST", body: `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, header: []string{"Mcp-Session-Id", id, "Mcp-Protocol-Version", "1999-01-01"}, status: http.StatusBadRequest},
		{name: "bad query", token: f.token, method: "POST", body: initialize, header: nil, status: http.StatusBadRequest},
		{name: "no token", method: "POST", body: initialize, status: http.StatusUnauthorized},
		{name: "foreign origin", token: f.token, method: "POST", body: initialize, header: []string{"Origin", "http://evil.example"}, status: http.StatusForbidden},
		{name: "foreign session", token: other, method: "POST", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, header: sess, status: http.StatusNotFound},
		{name: "unsupported HTTP method", token: f.token, method: "PUT", body: initialize, header: sess, status: http.StatusNotFound}, // mcp-go answers 404, not 405
		{name: "DELETE", token: f.token, method: "DELETE", header: []string{"Mcp-Session-Id", ended}, status: http.StatusOK},
		{name: "listening stream", token: f.token, method: "GET", header: sess, status: http.StatusOK, stream: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := "/mcp"
			if c.name == "bad query" {
				path = "/mcp?environment=staging"
			}
			res := f.rawAt(path, c.token, c.method, c.body, c.header...)
			require.Equal(t, c.status, res.StatusCode)
			if c.stream {
				require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream"))
				require.Equal(t, "no-cache", res.Header.Get("Cache-Control"))
			} else {
				require.False(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream"),
					"a stream answer would say no-cache; this one should not stream")
				require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
			}
			if c.has != "" {
				raw, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				require.Contains(t, string(raw), c.has)
			}
			require.Equal(t, "no-cache", res.Header.Get("Pragma"))
		})
	}
}

// rawAt sends one request to path (with its query) with token (none when empty); header
// pairs are added.
func (f *fixture) rawAt(path, token, method, body string, header ...string) *http.Response {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := f.srv.Client().Do(req)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { res.Body.Close() })
	return res
}
