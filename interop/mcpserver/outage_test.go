package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/sqlitestore"
	"github.com/gorunner/gorunner/tools"
)

// refusedDial is what a store's unreachable error carries: an address no agent should see.
const refusedDial = "dial tcp 10.9.8.7:6379: connect: connection refused"

// downStore is a store that cannot be reached for starting, keying and reading runs, as
// a backend answers when its server is down.
type downStore struct {
	*sqlitestore.Store
}

func unreachable(what string) error {
	return fmt.Errorf("%s: %w: %s", what, store.ErrUnreachable, refusedDial)
}

func (downStore) CreateRun(context.Context, runner.CreateRunParams) (runner.CreateRunResult, error) {
	return runner.CreateRunResult{}, unreachable("creating run")
}

func (downStore) Claim(context.Context, idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	return idempotency.ClaimResult{}, unreachable("claiming key")
}

func (downStore) GetRun(context.Context, string) (*runner.Run, error) {
	return nil, unreachable("getting run")
}

// TestUnreachableStoreIsAToolError: a tools/call whose store cannot be reached answers a
// tool result the agent can act on (isError, {"error": …} with 503 UNAVAILABLE and "retry")
// rather than a protocol error, and says nothing of the cause (no address).
func TestUnreachableStoreIsAToolError(t *testing.T) {
	f := newFixtureWith(t, &mcpserver.Config{PageSize: 2}, &fixture{wrap: func(st *sqlitestore.Store) servedStore {
		return downStore{Store: st}
	}}, greetDef)
	s, _ := f.connect("")
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"greet", map[string]any{"name": "Ada"}},
		{"greet", map[string]any{"name": "Ada", "idempotencyKey": "order-1"}},
		{tools.RunWorkflow, map[string]any{"workflow": "greet", "arguments": map[string]any{"name": "Ada"}}},
		{tools.GetRun, map[string]any{"runId": "0190a000-0000-7000-8000-000000000000"}},
	} {
		res, _ := call(t, s, tc.name, tc.args)
		require.True(t, res.IsError, "%s: %s", tc.name, text(res))
		var body struct {
			Error tools.Problem `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(text(res)), &body), text(res))
		require.Equal(t, http.StatusServiceUnavailable, body.Error.Status)
		require.Equal(t, "UNAVAILABLE", body.Error.Code)
		require.Contains(t, body.Error.Message, "store is unavailable")
		require.Contains(t, body.Error.Message, "retry")
		require.NotContains(t, text(res), "10.9.8.7")
		require.NotContains(t, text(res), "dial")
	}
}

// TestUnreachableStoreFailsATaskSaying: a task-augmented tools/call, answered with a
// JSON-RPC error rather than a tool result, says as well that the store is unavailable and
// to retry (in its message and its data, the tool error's problem), without the cause.
func TestUnreachableStoreFailsATaskSaying(t *testing.T) {
	f := newFixtureWith(t, nil, &fixture{wrap: func(st *sqlitestore.Store) servedStore {
		return downStore{Store: st}
	}}, greetDef)
	s := f.openSession(t)
	for _, args := range []map[string]any{{"name": "Ada"}, {"name": "Ada", "idempotencyKey": "task-1"}} {
		res, rpcErr := s.do(t, "tools/call", map[string]any{"name": "greet", "arguments": args, "task": map[string]any{}})
		require.Nil(t, res)
		require.NotNil(t, rpcErr)
		require.Contains(t, rpcErr["message"], "store is unavailable")
		data, _ := rpcErr["data"].(map[string]any)
		require.Equal(t, "UNAVAILABLE", data["code"], "%v", rpcErr)
		raw, err := json.Marshal(rpcErr)
		require.NoError(t, err)
		require.NotContains(t, string(raw), "10.9.8.7")
		require.NotContains(t, string(raw), "dial")
	}
}
