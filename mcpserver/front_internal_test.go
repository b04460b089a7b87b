package mcpserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

// TestFrontOverBothTransports: the same messages, sent over streamable HTTP and over
// stdio, get the same answers from the one front layer: task requests it answers
// (2026-07-28 with the tasks extension, so that neither needs a session), and what it
// refuses before any handler sees it.
func TestFrontOverBothTransports(t *testing.T) {
	s := heldServer(t)
	h := s.HTTPHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.Principal{ID: "agent", Scopes: auth.AdminScopes()}
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	stdio := serveStdioPipe(t, s)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`
	tests := []struct {
		name, id, method, taskID, line string
		status                         int
		code                           float64
	}{
		{name: "tasks/get of no task", id: `1`, method: "tasks/get", taskID: "nope",
			line: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"nope",` + meta + `}}`, status: http.StatusBadRequest, code: -32602},
		{name: "tasks/list, not of 2026-07-28", id: `"list"`, method: "tasks/list",
			line: `{"jsonrpc":"2.0","id":"list","method":"tasks/list","params":{` + meta + `}}`, status: http.StatusNotFound, code: -32601},
		{name: "invalid UTF-8", id: `2`, method: "tasks/get", taskID: "nope",
			line: "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"nope\",\"x\":\"\xff\"}}", status: http.StatusBadRequest, code: -32700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(tt.line))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", tt.method)
			req.Header.Set("Mcp-Name", tt.taskID)
			res, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			require.Equal(t, tt.status, res.StatusCode)
			var overHTTP map[string]any
			require.NoError(t, json.NewDecoder(res.Body).Decode(&overHTTP))

			stdio.send(t, tt.line)
			overStdio, _ := stdio.answer(t, tt.id)
			require.Equal(t, overHTTP, overStdio)
			require.Equal(t, tt.code, overStdio["error"].(map[string]any)["code"], "%v", overStdio)
		})
	}
}
