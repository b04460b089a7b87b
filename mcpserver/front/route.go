package front

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/auth"
)

// Tasks is the task layer Route hands task requests to.
type Tasks interface {
	// Task returns msg as a task request when the task layer answers it: the 2025-11-25
	// task methods and task-augmented tools/call, the 2026-07-28 tasks extension.
	Task(ctx context.Context, msg *Message) (Task, bool)
}

// Task is one task request the task layer answers.
type Task interface {
	// Version is the protocol version a 2026-07-28 (or later) request declares in its
	// _meta; "" for an earlier one, whose protocol its session negotiated.
	Version() string
	// Answer answers the request, which came in on the 2025-11-25 session named session
	// ("" none); link, when not nil, carries requests to the client meanwhile.
	Answer(ctx context.Context, session string, link *Link) mcp.JSONRPCMessage
}

// Reply is one answer Route gives through a Conn.
type Reply struct {
	Msg mcp.JSONRPCMessage
	// Refused marks the refusal of a message that cannot be taken as sent (over HTTP, a
	// 400).
	Refused bool
	// Modern marks the answer to a 2026-07-28 request, whose error carries the HTTP status
	// of its code over HTTP.
	Modern bool
}

// Conn is the transport side of what Route reads from one client: an HTTP request, a
// stdio session. It only frames bytes and knows its own checks.
type Conn interface {
	// Send writes a message to the client while an answer is being made: a request of the
	// server's (Link).
	Send(msg any) error
	// Reply writes an answer.
	Reply(r Reply)
	// Admit checks a task request (msg) as the transport must before it is answered and
	// returns the 2025-11-25 session it belongs to and whether the client can be sent
	// requests while it is answered; false: the transport refused it, answering itself.
	Admit(t Task, msg *Message) (session string, askable, ok bool)
	// Go runs answer, at once (HTTP, whose handler writes the answer) or on a goroutine
	// of its own (stdio, whose reader goes on).
	Go(answer func())
	// Calls are the session's calls, or nil when mcp-go runs them.
	Calls() *Calls
}

// Outcome is what Route did with a message.
type Outcome int

// Outcomes of Route.
const (
	// Pass: the message is mcp-go's; the transport hands it on unchanged.
	Pass Outcome = iota
	// Taken: the message needs no answer from the transport (a reply, a cancel, a call
	// taken by Calls, which answers it); HTTP answers 202.
	Taken
	// Answered: the answer went out through Conn.Reply, or goes out through it (Conn.Go).
	Answered
)

// Router routes each message a transport reads: Route.
type Router struct {
	tasks   Tasks
	replies *Replies
}

// NewRouter routes the task requests to tasks, and the replies to the requests it sends
// through replies, which the routers of every tool set share (a reply may come in on any).
func NewRouter(tasks Tasks, replies *Replies) *Router {
	return &Router{tasks: tasks, replies: replies}
}

// Route takes raw, one JSON-RPC message read from c's client by the principal in ctx, when
// the front layer answers it (see the package doc), and reports what it did; the message
// it returns is raw decoded, nil when it was not (a plain tools/call, a refusal).
func (r *Router) Route(ctx context.Context, raw []byte, c Conn) (Outcome, *Message) {
	if id, ok := plainCallID(raw); ok {
		if calls := c.Calls(); calls != nil && calls.take(raw, id) {
			return Taken, nil
		}
		return Pass, nil
	}
	if !utf8.Valid(raw) {
		c.Reply(invalidUTF8(raw)) // nothing reaches a handler
		return Answered, nil
	}
	if IsBatch(raw) {
		c.Reply(Reply{Msg: batchRefusal, Refused: true})
		return Answered, nil
	}
	var msg Message
	if json.Unmarshal(raw, &msg) != nil {
		return Pass, nil
	}
	return r.route(ctx, raw, &msg, c), &msg
}

// route is Route for msg, raw decoded.
func (r *Router) route(ctx context.Context, raw []byte, msg *Message, c Conn) Outcome {
	calls := c.Calls()
	switch {
	case msg.Method == "":
		return takenIf(r.replies.deliver(principalID(ctx), raw))
	case calls != nil && msg.Method == string(mcp.MethodNotificationCancelled) && (len(msg.ID) == 0 || string(msg.ID) == "null"):
		// mcp-go takes a message with a null id for a notification too.
		return takenIf(calls.cancelRequest(cancelledRequest(msg.Params)))
	}
	t, ok := r.tasks.Task(ctx, msg)
	if !ok {
		// mcp-go's stdio reader would queue any tools/call for HandleMessage (it sends the
		// client no request whose reply it could be); Calls takes it instead, so that a
		// cancel of it is heard in line order.
		return takenIf(calls != nil && msg.Method == string(mcp.MethodToolsCall) && calls.take(raw, msg.ID))
	}
	session, askable, ok := c.Admit(t, msg)
	if !ok {
		return Answered
	}
	var link *Link
	if askable {
		link = &Link{send: c.Send, replies: r.replies, principal: principalID(ctx)}
	}
	modern := mcp.IsModernProtocol(t.Version())
	c.Go(func() { c.Reply(Reply{Msg: t.Answer(ctx, session, link), Modern: modern}) })
	return Answered
}

// takenIf is Taken when taken, else Pass.
func takenIf(taken bool) Outcome {
	if taken {
		return Taken
	}
	return Pass
}

// cancelledRequest is the requestId of notifications/cancelled params, as mcp-go reads it
// (the member so spelled), or nil.
func cancelledRequest(params json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p["requestId"]
}

// principalID is the ID of the principal in ctx, or "".
func principalID(ctx context.Context) string {
	p, _ := auth.PrincipalFrom(ctx)
	return p.ID
}
