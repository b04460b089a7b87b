package main_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mcpTools is the folder holding the conformance and mcp-inspector commands (and Node 22),
// from GORUNNER_MCP_TOOLS; .ci/run installs them from .ci/mcp-tools. Without it the test
// skips, unless GORUNNER_MCP_TOOLS_REQUIRED=1.
func mcpTools(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GORUNNER_MCP_TOOLS")
	if dir == "" {
		if os.Getenv("GORUNNER_MCP_TOOLS_REQUIRED") == "1" {
			t.Fatal("GORUNNER_MCP_TOOLS is not set but GORUNNER_MCP_TOOLS_REQUIRED=1")
		}
		t.Skip("GORUNNER_MCP_TOOLS not set: the official MCP conformance suite is not installed")
	}
	return dir
}

// npmCommand runs a command from the tools folder, with its Node first on PATH.
func npmCommand(ctx context.Context, tools, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(tools, name), args...)
	cmd.Env = append(os.Environ(), "PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// TestMCPConformance runs the official MCP conformance suite's scenarios that apply to a
// server without the suite's fixture tools (GoRunner offers no logging, so
// logging-set-level does not apply) against the real `gorunner serve`, and a smoke call
// with the MCP Inspector CLI. The suite cannot send a bearer token, so it goes through a
// proxy that adds one and keeps the Host and Origin headers (for dns-rebinding-protection).
func TestMCPConformance(t *testing.T) {
	t.Parallel()
	tools := mcpTools(t)
	proxy := httptest.NewUnstartedServer(nil)
	defer proxy.Close()
	proxyURL := "http://" + proxy.Listener.Addr().String()
	// The suite reaches GoRunner through the proxy, so that is its public URL: the origin
	// the valid requests of dns-rebinding-protection come from.
	s := startServe(t, t.TempDir(), "--examples", "--public-url", proxyURL)
	token := s.adminToken(t)
	target, err := url.Parse(s.url)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	proxy.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
		rp.ServeHTTP(w, r)
	})
	proxy.Start()

	for _, scenario := range []string{"server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"} {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := npmCommand(ctx, tools, "conformance", "server", "--url", proxy.URL+"/mcp", "--scenario", scenario).CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "0 failed, 0 warnings", "%s", out)
		})
	}

	t.Run("inspector-cli", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := npmCommand(ctx, tools, "mcp-inspector", "--cli", s.url+"/mcp", "--transport", "http",
			"--header", "Authorization: Bearer "+token,
			"--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.True(t, strings.Contains(string(out), `"message": "Hello, Ada!"`), "%s", out)
		require.Contains(t, string(out), `"status": "completed"`)
	})
}
