package front

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

// fakeTasks is a task layer that takes the tasks/ methods and the tools/calls asking for
// a task; tasks/ask asks the client through its link and answers the client's result.
type fakeTasks struct{}

func (fakeTasks) Task(_ context.Context, msg *Message) (Task, bool) {
	var p struct {
		Task json.RawMessage `json:"task"`
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	switch msg.Method {
	case "tasks/get", "tasks/ask":
	case "tools/call":
		if len(p.Task) == 0 {
			return nil, false
		}
	default:
		return nil, false
	}
	return fakeTask{msg: msg, version: p.Meta.Version}, true
}

type fakeTask struct {
	msg     *Message
	version string
}

func (t fakeTask) Version() string { return t.version }

func (t fakeTask) Answer(ctx context.Context, session string, link *Link) mcp.JSONRPCMessage {
	if t.msg.Method != "tasks/ask" {
		return Answer(t.msg.ID, map[string]any{"method": t.msg.Method, "session": session}, nil)
	}
	if link == nil {
		return Answer(t.msg.ID, nil, NewError(mcp.INVALID_REQUEST, "cannot ask", nil))
	}
	res, err := link.Request(ctx, string(mcp.MethodElicitationCreate), map[string]any{"message": "sure?"})
	if err != nil {
		return Answer(t.msg.ID, nil, NewError(mcp.INTERNAL_ERROR, err.Error(), nil))
	}
	return Answer(t.msg.ID, res, nil)
}

// encoded is msg as JSON.
func encoded(t *testing.T, msg any) string {
	t.Helper()
	b, err := json.Marshal(msg)
	require.NoError(t, err)
	return string(b)
}

// TestRoute: what Route takes from one message, and the answer it gives.
func TestRoute(t *testing.T) {
	modern := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	tests := []struct {
		name    string
		raw     string
		refuse  bool // the transport refuses task requests
		outcome Outcome
		answer  string // the answer's JSON, "" for none
		refused bool
		modern  bool
	}{
		{name: "tasks/get", raw: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t"}}`, outcome: Answered,
			answer: `{"jsonrpc":"2.0","id":1,"result":{"method":"tasks/get","session":"mem"}}`},
		{name: "a string id, as sent", raw: `{"jsonrpc":"2.0","id":"a-1","method":"tasks/get"}`, outcome: Answered,
			answer: `{"jsonrpc":"2.0","id":"a-1","result":{"method":"tasks/get","session":"mem"}}`},
		{name: "2026-07-28 tasks/get", raw: `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{` + modern + `}}`, outcome: Answered,
			answer: `{"jsonrpc":"2.0","id":2,"result":{"method":"tasks/get","session":"mem"}}`, modern: true},
		{name: "tools/call with a task", raw: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"b","task":{}}}`, outcome: Answered,
			answer: `{"jsonrpc":"2.0","id":3,"result":{"method":"tools/call","session":"mem"}}`},
		{name: "a task request the transport refuses", raw: `{"jsonrpc":"2.0","id":4,"method":"tasks/get"}`, refuse: true, outcome: Answered},
		{name: "plain tools/call", raw: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"b"}}`, outcome: Pass},
		{name: "unknown method", raw: `{"jsonrpc":"2.0","id":6,"method":"tasks/nope"}`, outcome: Pass},
		{name: "initialize", raw: `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`, outcome: Pass},
		{name: "a reply to no request of the front layer", raw: `{"jsonrpc":"2.0","id":"gorunner-ask-x","result":{}}`, outcome: Pass},
		{name: "a reply to mcp-go", raw: `{"jsonrpc":"2.0","id":9,"result":{}}`, outcome: Pass},
		{name: "notifications/cancelled without calls", raw: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, outcome: Pass},
		{name: "not JSON", raw: `{"jsonrpc":`, outcome: Pass},
		{name: "batch", raw: ` [{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]`, outcome: Answered, refused: true,
			answer: encoded(t, batchRefusal)},
		{name: "invalid UTF-8", raw: "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"\xff\"}}", outcome: Answered, refused: true,
			answer: `{"jsonrpc":"2.0","id":8,"error":{"code":-32700,"message":"the request is not valid UTF-8"}}`},
		{name: "invalid UTF-8 in a tools/call", raw: "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}", outcome: Answered,
			answer: encoded(t, invalidUTF8([]byte("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\"}")).Msg)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, c := newConn(t, nil, CallsConfig{})
			c.refuse = tt.refuse
			outcome, _ := NewRouter(fakeTasks{}, &Replies{}).Route(ctx, []byte(tt.raw), c)
			require.Equal(t, tt.outcome, outcome)
			c.answers.Wait()
			if tt.answer == "" {
				c.none(t)
				return
			}
			r, ok := c.next(t).(Reply)
			require.True(t, ok)
			require.JSONEq(t, tt.answer, encoded(t, r.Msg))
			require.Equal(t, tt.refused, r.Refused)
			require.Equal(t, tt.modern, r.Modern)
		})
	}
}

// TestRouteReplies: a task request that asks the client sends it a request on its own
// exchange; the client's reply, a message of its own, reaches the request when it comes
// from the same principal, and is taken once: another principal's, and a second one, are
// left to mcp-go.
func TestRouteReplies(t *testing.T) {
	ctx, c := newConn(t, nil, CallsConfig{})
	r := NewRouter(fakeTasks{}, &Replies{})
	outcome, _ := r.Route(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/ask"}`), c)
	require.Equal(t, Answered, outcome)
	req, ok := c.next(t).(mcp.JSONRPCRequest)
	require.True(t, ok)
	require.Equal(t, string(mcp.MethodElicitationCreate), req.Method)
	reply := []byte(`{"jsonrpc":"2.0","id":` + encoded(t, req.ID) + `,"result":{"action":"accept"}}`)

	mallory := auth.WithPrincipal(context.Background(), auth.Principal{ID: "mallory"})
	outcome, _ = r.Route(mallory, reply, c)
	require.Equal(t, Pass, outcome, "another principal's reply")
	outcome, _ = r.Route(ctx, reply, c)
	require.Equal(t, Taken, outcome)
	answer, ok := c.next(t).(Reply)
	require.True(t, ok)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"action":"accept"}}`, encoded(t, answer.Msg))
	outcome, _ = r.Route(ctx, reply, c)
	require.Equal(t, Pass, outcome, "taken once")
}

// TestRouteCancels: with calls, a notifications/cancelled naming one of them is taken
// (with no id, or a null one, which mcp-go takes for a notification too); one naming an
// ID with the text of a call's (the string "1" for the call 1) is dropped, as mcp-go
// would cancel that call; one naming another request is mcp-go's.
func TestRouteCancels(t *testing.T) {
	tests := []struct {
		name, call, cancel string
		outcome            Outcome
		cancelled          bool
	}{
		{name: "its call", call: `1`, cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, outcome: Taken, cancelled: true},
		{name: "null id", call: `1`, cancel: `{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":1}}`, outcome: Taken, cancelled: true},
		{name: "the same text", call: `1`, cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1"}}`, outcome: Taken},
		{name: "the same text, a string call", call: `"true"`, cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":true}}`, outcome: Taken},
		{name: "another request", call: `1`, cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, outcome: Pass},
		{name: "with an id: a request", call: `1`, cancel: `{"jsonrpc":"2.0","id":5,"method":"notifications/cancelled","params":{"requestId":1}}`, outcome: Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate()
			ctx, c := newConn(t, g, CallsConfig{Max: 2, MaxQueued: 2})
			r := NewRouter(fakeTasks{}, &Replies{})
			outcome, _ := r.Route(ctx, callLine(tt.call), c)
			require.Equal(t, Taken, outcome)
			g.await(t)
			outcome, _ = r.Route(ctx, []byte(tt.cancel), c)
			require.Equal(t, tt.outcome, outcome)
			if tt.cancelled {
				require.Eventually(t, func() bool { return g.running.Load() == 0 }, 10*time.Second, time.Millisecond)
				c.calls.Stop()
				c.none(t)
				return
			}
			g.release <- struct{}{}
			resp, ok := c.next(t).(mcp.JSONRPCResponse)
			require.True(t, ok)
			require.Contains(t, encoded(t, resp.Result), `"text":"ok"`)
		})
	}
}
