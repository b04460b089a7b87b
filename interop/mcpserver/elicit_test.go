package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// asker answers elicitation requests with its answers in turn and records the messages.
type asker struct {
	mu       sync.Mutex
	answers  []*mcp.ElicitResult
	messages []string
	schemas  []any
}

func (a *asker) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.messages = append(a.messages, req.Params.Message)
	a.schemas = append(a.schemas, req.Params.RequestedSchema)
	res := a.answers[0]
	if len(a.answers) > 1 {
		a.answers = a.answers[1:]
	}
	return res, nil
}

func (f *fixture) connectAsker(a *asker) *mcp.ClientSession {
	f.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "asker", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: a.handle})
	return f.connectClient(client, f.token, "")
}

func TestElicitation(t *testing.T) {
	f := newFixture(t, askDef)
	tests := []struct {
		name    string
		answers []*mcp.ElicitResult
		output  map[string]any
		asked   int
	}{
		{"accept", []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"approved": true}}}, map[string]any{"approved": true}, 1},
		{"decline", []*mcp.ElicitResult{{Action: "decline"}}, map[string]any{"declined": true, "action": "decline"}, 1},
		{"cancel", []*mcp.ElicitResult{{Action: "cancel"}}, map[string]any{"declined": true, "action": "cancel"}, 1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &asker{answers: tc.answers}
			session := f.connectAsker(a)
			_, got := call(t, session, "ask", map[string]any{"orderId": fmt.Sprint("o", i)})
			require.Equal(t, "completed", got["status"], "%v", got)
			require.Equal(t, tc.output, got["output"])
			require.Len(t, a.messages, tc.asked)
			require.Equal(t, fmt.Sprintf("Charge order o%d?", i), a.messages[0])
			require.Equal(t, "object", a.schemas[0].(map[string]any)["type"])
		})
	}
}

// askCall is a 2026-07-28 tools/call of ask from a client that can elicit, answering a
// question with state and content when state is set. The Go SDK checks answers against the
// schema before sending them, so invalid answers are sent raw.
func askCall(id int, orderID, state string, content map[string]any) rpcRequest {
	params := map[string]any{"name": "ask", "arguments": map[string]any{"orderId": orderID}}
	if state != "" {
		params["requestState"] = state
		params["inputResponses"] = map[string]any{"approve": map[string]any{"action": "accept", "content": content}}
	}
	r := statelessRequest(id, "tools/call", "ask", params)
	r.body["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/clientCapabilities"] = map[string]any{"elicitation": map[string]any{}}
	return r
}

func TestElicitationInvalidAnswers(t *testing.T) {
	f := newFixture(t, askDef)
	first := f.rpcResult(t, askCall(1, "inv", "", nil))
	require.Equal(t, "input_required", first["resultType"])
	ask := first["inputRequests"].(map[string]any)["approve"].(map[string]any)
	require.Equal(t, "elicitation/create", ask["method"])
	require.Equal(t, "Charge order inv?", ask["params"].(map[string]any)["message"])

	state := first["requestState"].(string)
	for attempt := 2; attempt <= 3; attempt++ {
		again := f.rpcResult(t, askCall(attempt, "inv", state, map[string]any{"approved": true, "note": "far too long"}))
		require.Equal(t, "input_required", again["resultType"], "asked again")
		msg := again["inputRequests"].(map[string]any)["approve"].(map[string]any)["params"].(map[string]any)["message"].(string)
		require.Contains(t, msg, "/note")
		require.Contains(t, msg, "Charge order inv?")
		state = again["requestState"].(string)
	}
	gaveUp := f.rpcResult(t, askCall(4, "inv", state, map[string]any{"note": "x"}))
	require.Equal(t, "waiting", gaveUp["structuredContent"].(map[string]any)["status"], "after %d invalid answers the call answers the waiting run", 3)

	first = f.rpcResult(t, askCall(5, "ok", "", nil))
	bad := f.rpcResult(t, askCall(6, "ok", first["requestState"].(string), map[string]any{"approved": "yes"}))
	done := f.rpcResult(t, askCall(7, "ok", bad["requestState"].(string), map[string]any{"approved": true, "note": "fine"}))
	got := done["structuredContent"].(map[string]any)
	require.Equal(t, "completed", got["status"])
	require.Equal(t, map[string]any{"approved": true, "note": "fine"}, got["output"])
}

func TestNoElicitationClientResumesWithTheTool(t *testing.T) {
	f := newFixture(t, askDef)
	session, _ := f.connect("")
	_, got := call(t, session, "ask", map[string]any{"orderId": "plain"})
	require.Equal(t, "waiting", got["status"])
	hook := got["waitingOn"].(map[string]any)["hook"].(map[string]any)
	require.Equal(t, "ask:plain", hook["token"])
	require.Equal(t, "Charge order plain?", hook["message"], "the question, for the agent to put")
	require.Equal(t, []any{"approved"}, hook["schema"].(map[string]any)["required"])
	call(t, session, "gorunner_resume_hook", map[string]any{"token": "ask:plain", "payload": map[string]any{"approved": true}})
	require.Eventually(t, func() bool {
		_, done := call(t, session, "gorunner_get_run", map[string]any{"runId": got["runId"]})
		return done["status"] == "completed" && fmt.Sprint(done["output"]) == fmt.Sprint(map[string]any{"approved": true})
	}, 10*time.Second, 20*time.Millisecond)
}

// TestElicitationRacesRESTResume answers the question in the client and through the REST
// API at the same moment: the hook takes exactly one of the two answers, every time.
func TestElicitationRacesRESTResume(t *testing.T) {
	f := newFixture(t, askDef)
	var trial atomic.Int64
	var restWon, elicitWon int
	client := mcp.NewClient(&mcp.Implementation{Name: "racer", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n := trial.Load()
			done := make(chan struct{})
			go func() {
				defer close(done)
				f.rest("POST", fmt.Sprintf("/api/hooks/ask:race%d/resume", n), map[string]any{"approved": true, "via": "rest"}, http.Header{})
			}()
			<-done
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approved": true, "note": "mcp"}}, nil
		},
	})
	session := f.connectClient(client, f.token, "")
	for i := range 100 {
		trial.Store(int64(i))
		_, got := call(t, session, "ask", map[string]any{"orderId": fmt.Sprint("race", i)})
		require.Equal(t, "completed", got["status"])
		out := got["output"].(map[string]any)
		switch {
		case out["via"] == "rest" && out["note"] == nil:
			restWon++
		case out["note"] == "mcp" && out["via"] == nil:
			elicitWon++
		default:
			require.Fail(t, "the hook took a mix of answers", "%v", out)
		}
		run := f.engineRun(t, got["runId"].(string))
		require.Equal(t, 1, run.Steps[0].Attempts, "the hook step ran once")
	}
	t.Logf("REST first %d times, elicitation first %d times", restWon, elicitWon)
}
