package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/gorunner/gorunner/oauth/oauthtest"
)

// freeAddr is a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// TestOAuthAgainstServe: the real binary with --public-url is its own authorization
// server; a person signs in with a code from `gorunner auth approve`, and the access
// token the client gets lists and calls tools on /mcp.
func TestOAuthAgainstServe(t *testing.T) {
	addr := freeAddr(t)
	public := "http://" + addr
	s := startServe(t, t.TempDir(), "--examples", "--addr", addr, "--public-url", public)

	st, prm := call(t, "", "GET", s.url+"/.well-known/oauth-protected-resource/mcp", "")
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, []any{public}, prm["authorization_servers"])
	_, md := call(t, "", "GET", s.url+"/.well-known/oauth-authorization-server", "")
	require.Equal(t, public+"/oauth/token", md["token_endpoint"])

	code, stderr, exit := cli(t, s, "auth", "approve", "--scope", "runs:write", "--scope", "runs:read")
	require.Equal(t, 0, exit, stderr)
	code = strings.TrimSpace(code)
	require.Regexp(t, `^[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}$`, code)

	const redirect = "http://127.0.0.1:1/callback"
	var clientID string
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": clientID, "client_name": "E2E Assistant", "redirect_uris": []string{redirect}})
	}))
	defer docs.Close()
	clientID = docs.URL + "/client.json"
	conf := &oauth2.Config{ClientID: clientID, RedirectURL: redirect, Scopes: []string{"runs:write", "runs:read"},
		Endpoint: oauth2.Endpoint{AuthURL: md["authorization_endpoint"].(string), TokenURL: md["token_endpoint"].(string), AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()

	b := oauthtest.Browser(t)
	page := oauthtest.Open(t, b, conf.AuthCodeURL("e2e", oauth2.S256ChallengeOption(verifier)))
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.Contains(t, page.Body, "E2E Assistant")
	to, q := oauthtest.Callback(t, oauthtest.Submit(t, b, page, code, "approve", page.Scopes...))
	require.Equal(t, redirect, to)
	require.Equal(t, "e2e", q.Get("state"))

	ctx := context.Background()
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: public + "/mcp", HTTPClient: conf.Client(ctx, tok), MaxRetries: -1}, nil)
	require.NoError(t, err)
	defer session.Close()
	names := toolNames(t, session)
	require.NotEmpty(t, names)
	require.Contains(t, names, "gorunner_list_runs")
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "gorunner_list_runs", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, fmt.Sprint(res.Content))
}

// TestOAuthTypeScriptSDK: the MCP TypeScript SDK's OAuth client (.ci/mcp-tools/
// oauth-client.mjs) discovers GoRunner's authorization server from the 401, registers,
// runs the code flow with PKCE and lists the tools with its access token.
func TestOAuthTypeScriptSDK(t *testing.T) {
	tools := mcpTools(t)
	addr := freeAddr(t)
	public := "http://" + addr
	s := startServe(t, t.TempDir(), "--examples", "--addr", addr, "--public-url", public)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := npmCommand(ctx, tools, "node", filepath.Join(tools, "..", "..", "oauth-client.mjs"))
	cmd.Env = append(cmd.Env, "GORUNNER_URL="+public, "GORUNNER_SIGNIN="+s.adminToken(t))
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("oauth-client.mjs failed: %v\n%s\n%s", err, out, ee.Stderr)
	}
	require.NoError(t, err)
	var got struct {
		Tools []string `json:"tools"`
		Scope string   `json:"scope"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Contains(t, got.Tools, "gorunner_get_run")
	require.Equal(t, "runs:write runs:read", got.Scope)
}
