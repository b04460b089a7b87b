package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rpcRequest is one JSON-RPC message and the headers it goes with.
type rpcRequest struct {
	header http.Header
	body   map[string]any
	// query follows /mcp ("?environment=test"); empty is production.
	query string
}

// post POSTs r to /mcp (with r.query) with the fixture's token, as a streamable HTTP client does.
func (f *fixture) post(ctx context.Context, r rpcRequest) (*http.Response, error) {
	raw, err := json.Marshal(r.body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/mcp"+r.query, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return f.srv.Client().Do(req)
}

// rpcResult is the result of one JSON-RPC request POSTed to /mcp. The answer may come as
// JSON or as an SSE stream; both are read.
func (f *fixture) rpcResult(t testing.TB, r rpcRequest) map[string]any {
	t.Helper()
	res, err := f.post(context.Background(), r)
	require.NoError(t, err)
	defer res.Body.Close()
	payload := readMessage(t, res)
	var msg struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(payload, &msg), "%s", payload)
	require.Nil(t, msg.Error, "%s", payload)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", payload)
	return msg.Result
}

// readMessage reads the one JSON-RPC message of an answer, from its SSE data line when the
// server chose to stream.
func readMessage(t testing.TB, res *http.Response) []byte {
	t.Helper()
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var raw json.RawMessage
		require.NoError(t, json.NewDecoder(res.Body).Decode(&raw))
		return raw
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			return []byte(strings.TrimSpace(data))
		}
	}
	require.NoError(t, sc.Err())
	require.Fail(t, "the event stream ended without a message")
	return nil
}

func TestProtocolVersions(t *testing.T) {
	f := newFixture(t, greetDef)
	for _, tc := range []struct {
		asked, answered string
	}{
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		// 2026-07-28 dropped the initialize handshake; mcp-go answers an initialize that
		// asks for it with the newest handshake version, and serves 2026-07-28 statelessly
		// (TestStatelessProtocol).
		{"2026-07-28", "2025-11-25"},
	} {
		t.Run(tc.asked, func(t *testing.T) {
			got := f.rpcResult(t, rpcRequest{body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
				"protocolVersion": tc.asked,
				"capabilities":    map[string]any{},
				"clientInfo":      map[string]any{"name": "raw", "version": "1"},
			}}})
			require.Equal(t, tc.answered, got["protocolVersion"])
			require.Equal(t, "gorunner", got["serverInfo"].(map[string]any)["name"])
		})
	}
}

// stateless is the protocol version without the initialize handshake or sessions.
const stateless = "2026-07-28"

// statelessRequest is a 2026-07-28 request; name is the tool's, for tools/call. Its params
// carry the _meta every such request needs.
func statelessRequest(id int, method, name string, params map[string]any) rpcRequest {
	h := http.Header{"Mcp-Protocol-Version": {stateless}, "Mcp-Method": {method}}
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	p := maps.Clone(params)
	if p == nil {
		p = map[string]any{}
	}
	p["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    stateless,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	return rpcRequest{header: h, body: map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p}}
}

func TestStatelessProtocol(t *testing.T) {
	f := newFixtureConfig(t, nil, greetDef)
	discovered := f.rpcResult(t, statelessRequest(1, "server/discover", "", nil))
	require.Contains(t, discovered["supportedVersions"], stateless)

	listed := f.rpcResult(t, statelessRequest(2, "tools/list", "", nil))
	var names []string
	for _, tool := range listed["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	require.Contains(t, names, "greet")

	called := f.rpcResult(t, statelessRequest(3, "tools/call", "greet", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}))
	require.Equal(t, "hello Ada", called["structuredContent"].(map[string]any)["output"])
}
