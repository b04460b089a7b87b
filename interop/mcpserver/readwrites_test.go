package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// echoDef is a one-step workflow called name that answers with its input's n.
func echoDef(name string) string {
	return fmt.Sprintf(`{"name":%q,"input":{"type":"object","properties":{"n":{"type":"integer"}}},"steps":[{"id":"s","set":"${{ input.n }}"}]}`, name)
}

// TestPublishThenCallAtOnce: a workflow published over REST is a tool of this process's
// MCP server when the publish is answered (SPEC §5 read your writes), 100 times in a row;
// an unpublish or a delete is gone from the list when it is answered.
func TestPublishThenCallAtOnce(t *testing.T) {
	f := newLocalFixture(t)
	s, _ := f.connect("")
	for i := range 100 {
		name := fmt.Sprintf("rw-%03d", i)
		var def map[string]any
		require.NoError(t, json.Unmarshal([]byte(echoDef(name)), &def))
		res, _ := f.rest(http.MethodPost, "/api/workflows", def, http.Header{})
		require.Equal(t, http.StatusCreated, res.StatusCode)
		res, _ = f.rest(http.MethodPost, "/api/workflows/"+name+"/publish", nil, http.Header{})
		require.Equal(t, http.StatusCreated, res.StatusCode)

		out, sc := call(t, s, name, map[string]any{"n": i})
		require.False(t, out.IsError, "call %d of %s: %s", i, name, text(out))
		require.Equal(t, "completed", sc["status"])
		require.EqualValues(t, i, sc["output"])
	}

	res, _ := f.rest(http.MethodPost, "/api/workflows/rw-000/unpublish", nil, http.Header{})
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotContains(t, listTools(t, s), "rw-000")
	out, _ := call(t, s, "rw-000", map[string]any{"n": 1})
	require.True(t, out.IsError, "an unpublished workflow is not callable")

	req, err := http.NewRequest(http.MethodDelete, f.srv.URL+"/api/workflows/rw-001", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+f.token)
	del, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	del.Body.Close()
	require.Equal(t, http.StatusNoContent, del.StatusCode)
	require.NotContains(t, listTools(t, s), "rw-001")
	require.Contains(t, listTools(t, s), "rw-002")
}

// TestCallOfAToolAnotherProcessJustPublished: a workflow published by another process an
// instant ago, before this one's watcher saw it, is called by looking it up, never "tool
// not found"; a name the catalog does not publish still gets the unknown-tool answer.
func TestCallOfAToolAnotherProcessJustPublished(t *testing.T) {
	f := newLocalFixture(t)
	s, _ := f.connect("")
	other, err := sqlitestore.Open(context.Background(), f.dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	cat, err := catalog.New(other, nil)
	require.NoError(t, err)

	for i := range 20 {
		name := fmt.Sprintf("elsewhere-%02d", i)
		publish(t, cat, echoDef(name))
		out, sc := call(t, s, name, map[string]any{"n": i})
		require.False(t, out.IsError, "call of %s: %s", name, text(out))
		require.Equal(t, "completed", sc["status"])
	}
	require.Contains(t, listTools(t, s), "elsewhere-00", "the looked-up tool joined the tool set")

	w, err := cat.Create(context.Background(), []byte(echoDef("draft-only")))
	require.NoError(t, err)
	out, _ := call(t, s, w.Name, map[string]any{"n": 1})
	require.True(t, out.IsError, "a draft is no production tool")
	require.Contains(t, text(out), "draft-only")
}

// TestDispatchIsNotCallable: the hidden tool workflow calls go through cannot be called
// directly, even with the workflow's name forged into _meta: it is an unknown tool, and
// no run starts.
func TestDispatchIsNotCallable(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("")
	require.NotContains(t, listTools(t, s), "gorunner_call_workflow")
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{
		Meta:      mcp.Meta{"io.gorunner/workflow": "greet"},
		Name:      "gorunner_call_workflow",
		Arguments: map[string]any{"name": "x"},
	})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "gorunner_call_workflow")
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs)
}

// TestDraftIsATestToolAtOnce: a draft created or updated over REST is the test
// environment's tool when the write is answered, in its updated shape.
func TestDraftIsATestToolAtOnce(t *testing.T) {
	f := newLocalFixture(t)
	s, _ := f.connect("?environment=test")
	var def map[string]any
	require.NoError(t, json.Unmarshal([]byte(echoDef("drafted")), &def))
	res, _ := f.rest(http.MethodPost, "/api/workflows", def, http.Header{})
	require.Equal(t, http.StatusCreated, res.StatusCode)
	out, sc := call(t, s, "drafted", map[string]any{"n": 7})
	require.False(t, out.IsError, text(out))
	require.EqualValues(t, 7, sc["output"])

	def["steps"] = []any{map[string]any{"id": "s", "set": "updated"}}
	res, _ = f.rest(http.MethodPut, "/api/workflows/drafted", def, http.Header{})
	require.Equal(t, http.StatusOK, res.StatusCode)
	out, sc = call(t, s, "drafted", map[string]any{"n": 7})
	require.False(t, out.IsError, text(out))
	require.Equal(t, "updated", sc["output"])
}

// TestTaskCallOutsideTheTokensScopes: a task-augmented call of a workflow the token may not
// call is refused as a tool that does not exist, and starts no run; one it may call works.
func TestTaskCallOutsideTheTokensScopes(t *testing.T) {
	f := newFixture(t, greetDef, napDef)
	f.token = f.mint("runs:write:workflow=greet")
	s := f.openSession(t)
	_, rpcErr := s.do(t, "tools/call", map[string]any{"name": "nap", "arguments": map[string]any{"n": 1}, "task": map[string]any{"ttl": 60000}})
	require.NotNil(t, rpcErr, "a forbidden workflow is no task tool")
	require.Contains(t, rpcErr["message"], "not found")
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs)

	created := s.ok(t, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "ada"}, "task": map[string]any{"ttl": 60000}})
	require.NotEmpty(t, created["task"])
}
