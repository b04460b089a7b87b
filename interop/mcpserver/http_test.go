package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

func listTools(t *testing.T, s *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range s.Tools(context.Background(), nil) {
		require.NoError(t, err)
		out[tool.Name] = tool
	}
	return out
}

func TestToolsPerEnvironment(t *testing.T) {
	f := newFixture(t, greetDef, approveDef)
	_, err := f.catalog.Create(context.Background(), []byte(boomDef)) // a draft only
	require.NoError(t, err)

	prod, _ := f.connect("")
	got := listTools(t, prod) // three pages of two
	require.ElementsMatch(t, append([]string{"approve", "greet", "gorunner_get_run", "gorunner_list_runs", "gorunner_cancel_run", "gorunner_resume_hook"}, authoringTools...), keysOf(got))
	greet := got["greet"]
	require.Equal(t, "Greet", greet.Title)
	require.Equal(t, "Says hello.", greet.Description)
	schema := greet.InputSchema.(map[string]any)
	props := schema["properties"].(map[string]any)
	require.Contains(t, props, "name")
	require.Equal(t, map[string]any{"type": "string", "minLength": float64(1), "maxLength": float64(255)}, props["idempotencyKey"])
	require.Equal(t, []any{"name"}, schema["required"])
	out := greet.OutputSchema.(map[string]any)["properties"].(map[string]any)
	for _, p := range []string{"runId", "status", "output", "error", "replayed"} {
		require.Contains(t, out, p)
	}
	a := greet.Annotations
	require.NotNil(t, a)
	require.False(t, a.ReadOnlyHint)
	require.Equal(t, true, *a.DestructiveHint)
	require.False(t, a.IdempotentHint)
	require.Equal(t, false, *a.OpenWorldHint)

	test, _ := f.connect("?environment=test")
	require.Eventually(t, func() bool { _, ok := listTools(t, test)["boom"]; return ok }, time.Second, 10*time.Millisecond,
		"the test environment lists drafts")
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCallAnswersWithTheRun(t *testing.T) {
	f := newFixture(t, greetDef, boomDef)
	s, ev := f.connect("")

	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "greet", Arguments: map[string]any{"name": "Ada"}, Meta: mcp.Meta{"progressToken": "p1"}})
	require.NoError(t, err)
	got := structured(t, res)
	require.False(t, res.IsError, text(res))
	require.Equal(t, "completed", got["status"])
	require.Equal(t, "hello Ada", got["output"])
	require.Equal(t, false, got["replayed"])
	require.NotEmpty(t, got["runId"])
	var fromText map[string]any
	require.NoError(t, json.Unmarshal([]byte(text(res)), &fromText))
	require.Equal(t, got, fromText, "the text content is the same JSON")
	require.Eventually(t, func() bool {
		return slices.Equal(ev.progressMessages(), []string{"step hello completed", "step done completed"})
	}, 5*time.Second, 10*time.Millisecond, "%q", ev.progressMessages())

	res, got = call(t, s, "boom", nil)
	require.True(t, res.IsError)
	require.Equal(t, "failed", got["status"])
	require.Equal(t, "BOOM", got["error"].(map[string]any)["code"])
}

// problemDetail is one problem of a VALIDATION_ERROR tool error.
type problemDetail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// validationDetails is a tool error's problems; it fails unless res is a VALIDATION_ERROR.
func validationDetails(t *testing.T, res *mcp.CallToolResult) []problemDetail {
	t.Helper()
	require.True(t, res.IsError)
	var body struct {
		Error struct {
			Code    string          `json:"code"`
			Details []problemDetail `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(text(res)), &body))
	require.Equal(t, "VALIDATION_ERROR", body.Error.Code)
	return body.Error.Details
}

func TestInvalidArgumentsListEveryViolation(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("")
	res, _ := call(t, s, "greet", map[string]any{"times": "x", "extra": 1, "idempotencyKey": ""})
	var paths []string
	for _, d := range validationDetails(t, res) {
		paths = append(paths, d.Path)
	}
	require.Equal(t, []string{"/extra", "/idempotencyKey", "/name", "/times"}, paths)
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs, "no run was started")
}

// TestKeyOfAnyTypeListedWithTheInputsProblems: a key that is not a string, null included,
// is listed with the input's own problems, as a key of the wrong length is.
func TestKeyOfAnyTypeListedWithTheInputsProblems(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("")
	for _, tc := range []struct {
		key     any
		message string
	}{
		{nil, "got null, want string"},
		{42, "got number, want string"},
	} {
		res, _ := call(t, s, "greet", map[string]any{"name": 5, "idempotencyKey": tc.key})
		details := validationDetails(t, res)
		require.Len(t, details, 2, text(res))
		require.Equal(t, "/idempotencyKey", details[0].Path)
		require.True(t, strings.HasPrefix(details[0].Message, tc.message), details[0].Message)
		require.Equal(t, "/name", details[1].Path)
		require.True(t, strings.HasPrefix(details[1].Message, "got number, want string"), details[1].Message)
	}
	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Empty(t, runs, "no run was started")
}

func TestKeyedCallsReplayAcrossMCPAndREST(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("")
	args := map[string]any{"name": "Ada", "idempotencyKey": "order-1"}

	_, first := call(t, s, "greet", args)
	require.Equal(t, false, first["replayed"])
	_, again := call(t, s, "greet", args)
	require.Equal(t, true, again["replayed"])
	require.Equal(t, first["runId"], again["runId"])
	require.Equal(t, "completed", again["status"], "a replay answers with the run's current state")

	res, body := f.rest(http.MethodPost, "/api/workflows/greet/run?environment=production", map[string]any{"name": "Ada"},
		http.Header{"Idempotency-Key": {"order-1"}, "Content-Type": {"application/json"}})
	require.Equal(t, http.StatusAccepted, res.StatusCode)
	require.Equal(t, "true", res.Header.Get("Idempotency-Replayed"))
	require.Equal(t, first["runId"], body["data"].(map[string]any)["id"])

	mismatch, _ := call(t, s, "greet", map[string]any{"name": "Bob", "idempotencyKey": "order-1"})
	require.True(t, mismatch.IsError)
	require.Contains(t, text(mismatch), `"status":422`)

	runs, _, err := f.engine.List(context.Background(), runnerAll())
	require.NoError(t, err)
	require.Len(t, runs, 1, "one run for every call with the key")
}

func TestRESTFirstThenMCPReplays(t *testing.T) {
	f := newFixture(t, greetDef)
	s, _ := f.connect("")
	res, body := f.rest(http.MethodPost, "/api/workflows/greet/run?environment=production", map[string]any{"name": "Ada"},
		http.Header{"Idempotency-Key": {"k"}, "Content-Type": {"application/json"}})
	require.Equal(t, http.StatusAccepted, res.StatusCode)
	_, got := call(t, s, "greet", map[string]any{"idempotencyKey": "k", "name": "Ada"})
	require.Equal(t, true, got["replayed"])
	require.Equal(t, body["data"].(map[string]any)["id"], got["runId"])
}

func TestWaitingRunContinuesWithCompanions(t *testing.T) {
	f := newFixture(t, approveDef)
	s, _ := f.connect("")

	res, got := call(t, s, "approve", map[string]any{"orderId": "7"})
	require.False(t, res.IsError)
	require.Equal(t, "waiting", got["status"])
	runID := got["runId"]
	require.Equal(t, "order:7", got["waitingOn"].(map[string]any)["hook"].(map[string]any)["token"])

	_, resumed := call(t, s, "gorunner_resume_hook", map[string]any{"token": "order:7", "payload": map[string]any{"ok": true}})
	require.Equal(t, runID, resumed["runId"])
	var done map[string]any
	require.Eventually(t, func() bool {
		_, done = call(t, s, "gorunner_get_run", map[string]any{"runId": runID, "waitSeconds": 10})
		return done["status"] == "completed"
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, map[string]any{"ok": true}, done["output"])

	_, list := call(t, s, "gorunner_list_runs", map[string]any{"workflow": "approve"})
	require.Len(t, list["runs"], 1)

	_, waiting := call(t, s, "approve", map[string]any{"orderId": "8"})
	_, cancelled := call(t, s, "gorunner_cancel_run", map[string]any{"runId": waiting["runId"]})
	require.Equal(t, "cancelled", cancelled["status"])

	missing, _ := call(t, s, "gorunner_get_run", map[string]any{"runId": "nope"})
	require.True(t, missing.IsError)
	require.Contains(t, text(missing), "NOT_FOUND")
}

func TestListChangedAfterAnotherProcessPublishes(t *testing.T) {
	f := newFixture(t)
	s, ev := f.connect("")
	require.NotContains(t, listTools(t, s), "greet")

	// Another process: its own handle on the same SQLite file.
	other, err := sqlitestore.Open(context.Background(), f.dbPath)
	require.NoError(t, err)
	defer other.Close()
	cat, err := catalog.New(other, nil)
	require.NoError(t, err)
	publish(t, cat, greetDef)

	require.Eventually(t, func() bool { return ev.changes() > 0 }, time.Second, 10*time.Millisecond)
	require.Contains(t, listTools(t, s), "greet")

	require.NoError(t, cat.Delete(context.Background(), "greet"))
	require.Eventually(t, func() bool { return ev.changes() > 1 }, time.Second, 10*time.Millisecond)
	require.NotContains(t, listTools(t, s), "greet")
}

func TestUnauthenticated(t *testing.T) {
	f := newFixture(t)
	res, err := http.Post(f.srv.URL+"/mcp", "application/json", nil)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	metadataURL := f.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	require.Contains(t, res.Header.Get("WWW-Authenticate"), `Bearer `)
	require.Contains(t, res.Header.Get("WWW-Authenticate"), `resource_metadata="`+metadataURL+`"`)

	res, err = http.Get(metadataURL)
	require.NoError(t, err)
	defer res.Body.Close()
	var meta map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&meta))
	require.Equal(t, f.srv.URL+"/mcp", meta["resource"])
	require.Equal(t, []any{"header"}, meta["bearer_methods_supported"])
}

// TestListRunsFollowsShortPages: gorunner_list_runs examines what one REST page does (here
// 2 runs a page): a call that finds no completed run among them answers an empty page with
// nextCursor, and the agent, following the cursors, finds the completed run under the
// newer waiting ones, on a last page with no cursor.
func TestListRunsFollowsShortPages(t *testing.T) {
	f := newFixtureWith(t, &mcpserver.Config{PageSize: 2}, &fixture{wrap: func(st *sqlitestore.Store) servedStore {
		return struct {
			*runnertest.Examining
			idempotency.Store
			pinger
		}{&runnertest.Examining{Store: st, N: 2}, st, st}
	}}, greetDef, approveDef)
	s, _ := f.connect("")
	_, done := call(t, s, "greet", map[string]any{"name": "Ada"})
	require.Equal(t, "completed", done["status"])
	for i := range 5 {
		_, waiting := call(t, s, "approve", map[string]any{"orderId": strconv.Itoa(i)})
		require.Equal(t, "waiting", waiting["status"])
	}
	args := map[string]any{"status": "completed", "limit": 5}
	var sizes []int
	var runs []any
	for {
		_, list := call(t, s, "gorunner_list_runs", args)
		page := list["runs"].([]any)
		runs, sizes = append(runs, page...), append(sizes, len(page))
		next, ok := list["nextCursor"].(string)
		if !ok {
			break
		}
		require.Less(t, len(sizes), 5, "pagination must end")
		args["cursor"] = next
	}
	require.Equal(t, []int{0, 0, 1}, sizes)
	require.Equal(t, done["runId"], runs[0].(map[string]any)["runId"])
}
