package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/runner"
)

// Asking while a task is awaited (protocol 2025-11-25). A client that sees a task
// input_required calls tasks/result and expects the server's questions on that request's
// stream. The task layer answers tasks/result itself, outside mcp-go, so it also sends
// these requests itself (clientLink) and takes their replies, which the client sends back
// as separate messages, before they reach mcp-go (replies).

// replyIDPrefix starts the ID of every request the task layer sends to a client, so that
// its replies are told from those to mcp-go's own requests.
const replyIDPrefix = "gorunner-ask-"

// rpcReply is a client's reply to a request the server sent.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// replies routes the clients' replies to the requests the task layer sent, by request ID.
type replies struct {
	mu      sync.Mutex
	waiting map[string]pendingReply
}

// pendingReply is one request awaiting its reply, which only its principal may send.
type pendingReply struct {
	principal string
	ch        chan *rpcReply
}

// expect registers a request of principal's and returns its ID and where its reply comes;
// done forgets it.
func (r *replies) expect(principal string) (string, <-chan *rpcReply, func()) {
	id := replyIDPrefix + rand.Text()
	ch := make(chan *rpcReply, 1)
	r.mu.Lock()
	if r.waiting == nil {
		r.waiting = map[string]pendingReply{}
	}
	r.waiting[id] = pendingReply{principal: principal, ch: ch}
	r.mu.Unlock()
	return id, ch, func() {
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
	}
}

// deliver hands raw, a message from principal, to the request it replies to, and reports
// whether it was such a reply; a reply is taken once.
func (r *replies) deliver(principal string, raw []byte) bool {
	var reply rpcReply
	var id string
	if json.Unmarshal(raw, &reply) != nil || json.Unmarshal(reply.ID, &id) != nil {
		return false
	}
	r.mu.Lock()
	pending, ok := r.waiting[id]
	if ok && pending.principal == principal {
		delete(r.waiting, id)
	}
	r.mu.Unlock()
	if !ok || pending.principal != principal {
		return false
	}
	pending.ch <- &reply
	return true
}

// clientLink sends requests to the client of the request being answered, on its stream.
type clientLink struct {
	// send writes one message on the stream.
	send      func(msg any) error
	replies   *replies
	principal string
}

// errNoAnswer ends the asking: the client could not take the request or answered it with
// an error, so it is not asked again.
var errNoAnswer = errors.New("the client did not answer the question")

// request sends method with params and returns the client's result.
func (l *clientLink) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id, reply, done := l.replies.expect(l.principal)
	defer done()
	if err := l.send(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "method": method, "params": params}); err != nil {
		return nil, errors.Join(errNoAnswer, err)
	}
	select {
	case r := <-reply:
		if r.Error != nil {
			return nil, errors.Join(errNoAnswer, r.Error)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// elicitors remembers which 2025-11-25 sessions declared elicitation at initialize.
type elicitors struct{ sessions sync.Map }

// hooks records each session's elicitation capability and forgets it with the session.
func (e *elicitors) hooks(h *server.Hooks) {
	h.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		if session := server.ClientSessionFromContext(ctx); session != nil && req.Params.Capabilities.Elicitation != nil {
			e.sessions.Store(session.SessionID(), true)
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, session server.ClientSession) {
		e.sessions.Delete(session.SessionID())
	})
}

func (e *elicitors) can(sessionID string) bool {
	_, ok := e.sessions.Load(sessionID)
	return ok
}

// askOverLink puts the question of the hook run waits on to the person through the
// client, with the task it belongs to, until an answer fits or MaxAskAttempts answers to
// that hook did not (counted on the run with the other ways of asking, missAnswer), and
// resumes the hook with it as a tool call's question does. It reports whether the hook
// was answered; false leaves it to other answers (REST resume, gorunner_resume_hook).
func (s *Server) askOverLink(ctx context.Context, l *clientLink, run *runner.Run, ask *pendingAsk) (bool, error) {
	message := ask.message
	for {
		raw, err := l.request(ctx, string(mcp.MethodElicitationCreate), map[string]any{
			"message": message, "requestedSchema": ask.schema,
			"_meta": mcp.WithRelatedTask(run.ID).AdditionalFields,
		})
		if err != nil {
			return false, err
		}
		var res mcp.ElicitationResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return false, errors.Join(errNoAnswer, err)
		}
		payload, problems := answerPayload(&res, ask)
		if len(problems) == 0 {
			return true, s.resumeAsked(ctx, run, ask, payload)
		}
		if n, err := s.missAnswer(ctx, run, ask); err != nil || n >= MaxAskAttempts {
			return false, err
		}
		message = retryMessage(ask.message, problems)
	}
}
