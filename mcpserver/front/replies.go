package front

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// replyIDPrefix starts the ID of every request the front layer sends a client, so that
// its replies are told from those to mcp-go's own requests.
const replyIDPrefix = "gorunner-ask-"

// clientReply is a client's reply to a request the front layer sent.
type clientReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// Replies routes the clients' replies to the requests the front layer sent them, by
// request ID; a request's reply is taken only from the principal it was sent to. The zero
// value is ready.
type Replies struct {
	mu      sync.Mutex
	waiting map[string]pendingReply
}

// pendingReply is one request awaiting its reply, which only its principal may send.
type pendingReply struct {
	principal string
	ch        chan *clientReply
}

// expect registers a request of principal's and returns its ID and where its reply comes;
// done forgets it.
func (r *Replies) expect(principal string) (string, <-chan *clientReply, func()) {
	id := replyIDPrefix + rand.Text()
	ch := make(chan *clientReply, 1)
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
func (r *Replies) deliver(principal string, raw []byte) bool {
	var rp clientReply
	var id string
	if json.Unmarshal(raw, &rp) != nil || json.Unmarshal(rp.ID, &id) != nil {
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
	pending.ch <- &rp
	return true
}

// Link sends requests to the client of the request being answered, on its stream, and
// takes their replies through Replies.
type Link struct {
	send      func(msg any) error
	replies   *Replies
	principal string
}

// ErrNoAnswer ends an exchange with the client: it could not take the request or answered
// it with an error, so it is not asked again.
var ErrNoAnswer = errors.New("the client did not answer the request")

// Request sends method with params and returns the client's result.
func (l *Link) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id, replied, done := l.replies.expect(l.principal)
	defer done()
	req := mcp.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Params: params, Request: mcp.Request{Method: method}}
	if err := l.send(req); err != nil {
		return nil, errors.Join(ErrNoAnswer, err)
	}
	select {
	case r := <-replied:
		if r.Error != nil {
			return nil, errors.Join(ErrNoAnswer, r.Error)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
