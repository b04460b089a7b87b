package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// failingStore is a store whose calls for starting, keying and reading runs fail with
// fail(what they do), and whose readiness check answers ping.
type failingStore struct {
	*sqlitestore.Store
	fail func(what string) error
	ping error
}

func (f failingStore) Ping(context.Context) error { return f.ping }

func (f failingStore) CreateRun(context.Context, runner.CreateRunParams) (runner.CreateRunResult, error) {
	return runner.CreateRunResult{}, f.fail("creating run")
}

func (f failingStore) Claim(context.Context, idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	return idempotency.ClaimResult{}, f.fail("claiming key")
}

func (f failingStore) GetRun(context.Context, string) (*runner.Run, error) {
	return nil, f.fail("getting run")
}

// unreachable is the error of a store that cannot be reached, as a backend answers when
// its server is down.
func unreachable(what string) error {
	return fmt.Errorf("%s: %w: %s", what, store.ErrUnreachable, refusedDial)
}

// diskPath is what a store's unmarked error may carry: a path no agent should see.
const diskPath = "/var/lib/gorunner/gorunner.db"

// broken is an error the store did not mark store.ErrUnreachable (one its driver gave no
// sign of).
func broken(what string) error {
	return fmt.Errorf("%s: disk I/O error in %s", what, diskPath)
}

// outages are the stores that cannot serve, as the REST API tells them (503 UNAVAILABLE):
// an error marked store.ErrUnreachable, and any error while the store's readiness check
// fails.
var outages = []struct {
	name string
	wrap func(*sqlitestore.Store) servedStore
}{
	{"unreachable", func(st *sqlitestore.Store) servedStore { return failingStore{Store: st, fail: unreachable} }},
	{"unmarked error, ping failing", func(st *sqlitestore.Store) servedStore {
		return failingStore{Store: st, fail: broken, ping: fmt.Errorf("pinging %s: %w", diskPath, errors.New("disk I/O error"))}
	}},
}

// requireNoCause fails when what an agent got names the cause of a store's failure.
func requireNoCause(t *testing.T, got string) {
	t.Helper()
	for _, cause := range []string{"10.9.8.7", "dial", diskPath, "disk I/O"} {
		require.NotContains(t, got, cause)
	}
}

// TestUnreachableStoreIsAToolError: a tools/call whose store cannot serve it (outages)
// answers a tool result the agent can act on (isError, {"error": …} with 503 UNAVAILABLE
// and "retry") rather than a protocol error, and says nothing of the cause (no address, no
// path).
func TestUnreachableStoreIsAToolError(t *testing.T) {
	for _, outage := range outages {
		t.Run(outage.name, func(t *testing.T) {
			f := newFixtureWith(t, &mcpserver.Config{PageSize: 2}, &fixture{wrap: outage.wrap}, greetDef)
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
				requireNoCause(t, text(res))
			}
		})
	}
}

// TestBrokenStoreUpIsAnInternalError: an unmarked error of a store whose readiness check
// passes is a bug, not an outage: a tools/call answers a bare protocol error, a task
// request a bare internal error, neither naming the cause.
func TestBrokenStoreUpIsAnInternalError(t *testing.T) {
	f := newFixtureWith(t, nil, &fixture{wrap: func(st *sqlitestore.Store) servedStore {
		return failingStore{Store: st, fail: broken}
	}}, greetDef)
	s, _ := f.connect("")
	_, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	require.ErrorContains(t, err, "internal error")
	requireNoCause(t, err.Error())

	res, rpcErr := f.openSession(t).do(t, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}, "task": map[string]any{}})
	require.Nil(t, res)
	require.Equal(t, map[string]any{"code": float64(-32603), "message": "internal error; see the server log"}, rpcErr)
}

// TestUnreachableStoreFailsATaskSaying: a task-augmented tools/call whose store cannot
// serve it (outages), answered with a JSON-RPC error rather than a tool result, says as
// well that the store is unavailable and to retry (in its message and its data, the tool
// error's problem), without the cause.
func TestUnreachableStoreFailsATaskSaying(t *testing.T) {
	for _, outage := range outages {
		t.Run(outage.name, func(t *testing.T) {
			f := newFixtureWith(t, nil, &fixture{wrap: outage.wrap}, greetDef)
			s := f.openSession(t)
			for _, args := range []map[string]any{{"name": "Ada"}, {"name": "Ada", "idempotencyKey": "task-1"}} {
				res, rpcErr := s.do(t, "tools/call", map[string]any{"name": "greet", "arguments": args, "task": map[string]any{}})
				require.Nil(t, res)
				require.NotNil(t, rpcErr)
				require.Equal(t, float64(-32603), rpcErr["code"])
				require.Contains(t, rpcErr["message"], "store is unavailable")
				data, _ := rpcErr["data"].(map[string]any)
				require.Equal(t, "UNAVAILABLE", data["code"], "%v", rpcErr)
				require.Equal(t, float64(http.StatusServiceUnavailable), data["status"], "%v", rpcErr)
				raw, err := json.Marshal(rpcErr)
				require.NoError(t, err)
				requireNoCause(t, string(raw))
			}
		})
	}
}
