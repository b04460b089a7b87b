package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Calls runs the tools/calls of one session on workers of its own, through mcp-go's
// Handler, in the context mcp-go serves the session in (its session, the principal), as
// mcp-go's stdio tool call workers would; a call finding no idle worker starts one, so
// calls that wait for their runs never hold up others. At most CallsConfig.Max run at
// once; the ones past it wait in a queue of CallsConfig.MaxQueued for the next worker free,
// and past that the read loop waits, so a client sending calls faster than they end cannot
// make the process hold them all. The counts are kept under mu, which taking and
// forgetting a call hold anyway: a worker done with a call takes the first queued one in
// its place before the call counts as ended, so no call taken meanwhile can run beside it
// past the bound.
//
// Route registers each call it takes (take) under its request ID before any later message
// is read, and answers a notifications/cancelled naming it (cancelRequest) by cancelling the call's
// context: the cancel reaches the call in line order, whether the call runs, waits in the
// queue or has not yet reached MCPServer.HandleMessage (whose own registration, made on the
// worker, a cancel read meanwhile would miss).
type Calls struct {
	handler Handler
	send    func(msg any) error
	log     *slog.Logger
	// work hands calls to the idle workers: it holds at most as many as idle counted
	// (next), so a send to it never waits, even for a worker gone with the session.
	work chan *takenCall
	// queue holds the calls taken past max, for the next worker free; it is sent to and
	// received from under mu only, when it has room or a call.
	queue chan *takenCall
	max   int

	mu      sync.Mutex
	ctx     context.Context // nil until the session is served, and after stop
	cancel  context.CancelFunc
	stopped bool
	calls   map[string]*takenCall // the calls taken and not yet answered, by callKey
	running int                   // calls on workers, queued ones not counted: at most max
	idle    int                   // idle workers not yet handed a call: at most maxIdleWorkers
	room    chan struct{}         // while the read loop waits for room in queue: closed once there is
	wg      sync.WaitGroup
}

// takenCall is one tools/call taken: its message, and its context, which a
// notifications/cancelled naming its request ID cancels (errCallCancelled).
type takenCall struct {
	key    string
	line   []byte
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// errCallCancelled is the cause of a call's context cancelled by the client.
var errCallCancelled = errors.New("the client cancelled the request")

// maxIdleWorkers is how many of a session's workers wait for the next call once they
// answered one; the others end. A worker keeps the stack its calls grew (the
// SQLite of an admission, transpiled C, needs a deep one): with a new goroutine per call,
// growing it again took ~50 µs of CPU a call. (mcp-go's stdio server keeps 5 workers.)
const maxIdleWorkers = 16

// Handler is what answers the calls: mcp-go's *server.MCPServer.
type Handler interface {
	HandleMessage(ctx context.Context, message json.RawMessage) mcp.JSONRPCMessage
}

// CallsConfig bounds the calls of a session; both bounds are required.
type CallsConfig struct {
	// Max is how many calls run at once.
	Max int
	// MaxQueued is how many calls wait for one of the Max to end; past it the session
	// reads no more messages until one does.
	MaxQueued int
	// Log receives the failures to write an answer (default slog.Default()).
	Log *slog.Logger
}

// NewCalls runs a session's calls through h, writing each answer with send (one whole
// message at a time). Until Serve gives it the session's context it takes none.
func NewCalls(h Handler, send func(msg any) error, cfg CallsConfig) *Calls {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Calls{handler: h, send: send, log: log, work: make(chan *takenCall, maxIdleWorkers),
		queue: make(chan *takenCall, cfg.MaxQueued), max: cfg.Max, calls: map[string]*takenCall{}}
}

// Serve is the stdio server's context function (server.StdioContextFunc): it learns the
// session's context.
func (c *Calls) Serve(ctx context.Context) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.ctx, c.cancel = context.WithCancel(ctx)
	}
	return ctx
}

// take answers line, a tools/call request with ID id that mcp-go's stdio reader would
// hand to MCPServer.HandleMessage as it is, when the session is initialised, and reports
// whether it did: on an idle worker or a new one, else, past max, through the
// queue, waiting while it is full. Until notifications/initialized, which mcp-go reads in
// line order, the call goes the same way, behind it. (mcp-go has one stdio session per
// process.)
func (c *Calls) take(line, id []byte) bool {
	key, ok := callKey(id)
	if !ok {
		return false
	}
	c.mu.Lock()
	ctx := c.ctx
	if ctx == nil {
		c.mu.Unlock()
		return false
	}
	if session := server.ClientSessionFromContext(ctx); session == nil || !session.Initialized() {
		c.mu.Unlock()
		return false
	}
	call := &takenCall{key: key, line: line}
	call.ctx, call.cancel = context.WithCancelCause(ctx)
	c.calls[key] = call
	for !c.dispatch(ctx, call) {
		if c.room == nil {
			c.room = make(chan struct{})
		}
		room := c.room
		c.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			c.finish(call)
			return true
		}
		c.mu.Lock()
	}
	c.mu.Unlock()
	return true
}

// dispatch hands call to an idle worker or a new one while fewer than max run,
// else queues it, and reports false when the queue is full. c.mu is held, so that stop,
// once it has taken ctx, waits for every worker started. The queue holds calls only while
// max run (next), so a call never starts ahead of one queued.
func (c *Calls) dispatch(ctx context.Context, call *takenCall) bool {
	switch {
	case c.running < c.max:
		c.running++
		if c.idle > 0 {
			c.idle--
			c.work <- call
		} else {
			c.wg.Go(func() { c.worker(ctx, call) })
		}
	case len(c.queue) < cap(c.queue):
		c.queue <- call
	default:
		return false
	}
	return true
}

// cancelRequest answers a notifications/cancelled naming requestID, read in line order: it
// cancels the call taken under that ID and reports whether there was one. A cancel naming
// another request is mcp-go's, unless that request's ID has the text of one of the calls'
// (the string "1" and the call 1, true and the call "true"): mcp-go keys the requests it
// cancels by their ID's text (fmt's %v of the ID decoded), whatever its type, so it would
// cancel that call, which the cancel does not name. Such a cancel is dropped.
func (c *Calls) cancelRequest(requestID json.RawMessage) bool {
	var id any
	if json.Unmarshal(requestID, &id) != nil {
		return false
	}
	key, _ := callKey(requestID) // "" for an ID neither string nor number: no call's
	text := fmt.Sprint(id)
	c.mu.Lock()
	call := c.calls[key]
	twin := c.calls["s"+text] != nil || c.calls["n"+text] != nil
	c.mu.Unlock()
	if call == nil {
		return twin
	}
	call.cancel(errCallCancelled)
	return true
}

// callKey is the key of a request ID (a JSON string or number) in Calls.calls: IDs
// that mcp-go's decoding takes for the same (1 and 1.0) share a key; a string and a
// number never do. The key is the ID's text as mcp-go's cancels key it (fmt's %v of the
// ID decoded: the string, or the shortest form of the float64), after "s" for a string,
// "n" for a number.
func callKey(id []byte) (string, bool) {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) != nil {
			return "", false
		}
		return "s" + s, true
	}
	f, err := strconv.ParseFloat(string(id), 64)
	if err != nil {
		return "", false
	}
	return "n" + strconv.FormatFloat(f, 'g', -1, 64), true
}

// worker answers call, then the calls queued or handed to it while it is one of the idle
// workers kept, until ctx ends.
func (c *Calls) worker(ctx context.Context, call *takenCall) {
	for call != nil {
		c.answer(call)
		call = c.next(ctx, call)
	}
}

// next forgets done, answered, and returns the call the worker answers next: the first
// queued, which takes done's place among the max; else, when the worker is one of
// the maxIdleWorkers kept, the next handed to it; else, or once ctx ends, nil.
func (c *Calls) next(ctx context.Context, done *takenCall) *takenCall {
	c.mu.Lock()
	c.forget(done)
	if len(c.queue) > 0 {
		call := <-c.queue
		if c.room != nil {
			close(c.room)
			c.room = nil
		}
		c.mu.Unlock()
		done.cancel(nil)
		return call
	}
	c.running--
	kept := c.idle+len(c.work) < maxIdleWorkers
	if kept {
		c.idle++
	}
	c.mu.Unlock()
	done.cancel(nil)
	if !kept {
		return nil
	}
	select {
	case call := <-c.work:
		return call
	case <-ctx.Done():
		return nil
	}
}

// answer runs call and writes its response, unless the client cancelled it: a cancelled
// request is not answered (MCP cancellation), and one cancelled while it waited is not run.
func (c *Calls) answer(call *takenCall) {
	if c.cancelled(call) {
		return
	}
	resp := c.handle(call.ctx, call.line)
	if resp == nil || c.cancelled(call) {
		return
	}
	if err := c.send(resp); err != nil {
		c.log.Error("mcp: writing a tool response", "err", err)
	}
}

// cancelled reports whether the client cancelled call.
func (c *Calls) cancelled(call *takenCall) bool {
	return errors.Is(context.Cause(call.ctx), errCallCancelled)
}

// finish forgets call, dropped.
func (c *Calls) finish(call *takenCall) {
	c.mu.Lock()
	c.forget(call)
	c.mu.Unlock()
	call.cancel(nil)
}

// forget removes call from c.calls, unless a later call took its key. c.mu is held.
func (c *Calls) forget(call *takenCall) {
	if c.calls[call.key] == call {
		delete(c.calls, call.key)
	}
}

// handle is Handler.HandleMessage, a panic answered as mcp-go's stdio workers answer one.
func (c *Calls) handle(ctx context.Context, line []byte) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("mcp: panic recovered in a tool call", "panic", r)
			var msg struct {
				ID any `json:"id"`
			}
			_ = json.Unmarshal(line, &msg)
			detail := mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r), nil)
			resp = mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(msg.ID), Error: detail}
		}
	}()
	return c.handler.HandleMessage(ctx, line)
}

// Stop cancels the calls still running, as mcp-go cancels its workers' when its input
// ends, waits for them, and takes no more.
func (c *Calls) Stop() {
	c.mu.Lock()
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	}
	c.ctx = nil
	c.mu.Unlock()
	c.wg.Wait()
}
