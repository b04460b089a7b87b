package main_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"
)

// keyedTool is an MCP server (mcp-go, streamable HTTP) whose tool charge takes an
// idempotencyKey and honours it as GoRunner's tools do: the first call with a key makes the
// effect, a later one replays its answer. It counts the calls and the effects per key;
// while hold is set, a first call blocks after its effect until its caller goes away, so
// a test can kill the caller between the remote effect and the caller's record of it.
type keyedTool struct {
	*httptest.Server
	mu      sync.Mutex
	calls   map[string]int
	effects map[string]int
	hold    bool
	arrived chan string
}

func newKeyedTool(t *testing.T) *keyedTool {
	k := &keyedTool{calls: map[string]int{}, effects: map[string]int{}, arrived: make(chan string, 10)}
	s := mcpserver.NewMCPServer("keyed", "1", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("charge", mcp.WithNumber("amount"), mcp.WithString("idempotencyKey")), k.charge)
	k.Server = httptest.NewServer(mcpserver.NewStreamableHTTPServer(s))
	t.Cleanup(func() { k.CloseClientConnections(); k.Close() })
	return k
}

func (k *keyedTool) charge(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	key := req.GetString("idempotencyKey", "")
	k.mu.Lock()
	k.calls[key]++
	first := k.effects[key] == 0
	if first {
		k.effects[key]++
	}
	hold := first && k.hold
	k.mu.Unlock()
	k.arrived <- key
	if hold {
		<-ctx.Done() // the caller was killed; its answer is never read
		return nil, ctx.Err()
	}
	return mcp.NewToolResultStructured(map[string]any{"charged": req.GetFloat("amount", 0), "replayed": !first}, "charged"), nil
}

func (k *keyedTool) setHold(v bool) {
	k.mu.Lock()
	k.hold = v
	k.mu.Unlock()
}

func (k *keyedTool) counts() (calls, effects map[string]int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	calls, effects = map[string]int{}, map[string]int{}
	for key, n := range k.calls {
		calls[key] = n
	}
	for key, n := range k.effects {
		effects[key] = n
	}
	return calls, effects
}

// TestMCPStepCrashReplays SIGKILLs the real binary while its mcp step's call has made its
// effect on the remote server but before the step's record is written, restarts it on the
// same data directory, and shows the step called again with the same idempotencyKey (its
// stepId), which the remote replayed: one effect for the key, two calls.
func TestMCPStepCrashReplays(t *testing.T) {
	t.Parallel()
	remote := newKeyedTool(t)
	remote.setHold(true)

	dir := t.TempDir()
	flags := []string{"--lease-ttl", "2s", "--http-allow", "127.0.0.1"}
	s := startServe(t, dir, flags...)
	token := s.adminToken(t)
	publish(t, s, token, `{"name": "pay", "input": {"type": "object"}, "steps": [
	  {"id": "charge", "mcp": {"url": "`+remote.URL+`/mcp", "tool": "charge", "arguments": {"amount": 42}},
	   "retry": {"maxAttempts": 5, "initialInterval": "100ms"}}
	], "result": "${{ steps.charge.output.structuredContent }}"}`)
	status, body := call(t, token, "POST", s.url+"/api/workflows/pay/run", `{}`)
	require.Equal(t, 202, status, body)
	runID := body["data"].(map[string]any)["id"].(string)

	var firstKey string
	select {
	case firstKey = <-remote.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the mcp step never called")
	}
	require.NoError(t, s.cmd.Process.Kill(), "killed while the remote holds its answer")
	_ = s.cmd.Wait()
	remote.setHold(false)

	s = startServe(t, dir, flags...)
	status, body = call(t, token, "GET", s.url+"/api/runs/"+runID+"?wait=60s", "")
	require.Equal(t, http.StatusOK, status)
	run := body["data"].(map[string]any)
	require.Equal(t, "completed", run["status"], run)
	require.Equal(t, map[string]any{"charged": float64(42), "replayed": true}, run["output"], "the retry got the replayed answer")

	require.Equal(t, firstKey, stepsByID(run)["charge"]["stepId"], "the key is the step's stepId")
	calls, effects := remote.counts()
	require.Equal(t, map[string]int{firstKey: 2}, calls, "the interrupted call and its retry, under one key")
	require.Equal(t, map[string]int{firstKey: 1}, effects, "the remote made the effect once")
}
