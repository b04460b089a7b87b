package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A plain tools/call — one that asks for no task (2025-11-25) and does not declare the
// tasks extension (2026-07-28) — is neither the task layer's nor a reply to a request the
// server sent. Over stdio, through the task layer and mcp-go's stdio reader, it was
// decoded six times (the task layer's rpcMessage and params, mcp-go's validity check, its
// three reply checks and its method check) and handed over twice (the pipe to mcp-go's
// reader, its worker queue) before MCPServer.HandleMessage decoded it once more.
// plainToolsCall tells such a line by one validity check and a scan of its keys;
// stdioCalls hands it to HandleMessage at once, in the session's context, as mcp-go's
// tool call workers would, and taskHTTP hands its body to mcp-go without decoding it.

// plainToolsCall reports whether line is surely a tools/call request that neither the
// task layer (taskCallOf, replies) nor mcp-go's stdio reader (its sampling, elicitation
// and roots reply checks) takes, so that mcp-go would queue it for
// MCPServer.HandleMessage as it is. It answers false whenever it cannot be sure; such a
// line takes the general path.
//
// encoding/json, which both the task layer and mcp-go decode with, matches keys without
// regard to case (bytes.EqualFold: "TASK" and "taſk" are "task"), lets the last of
// repeated keys win, and decodes escapes (`"t\u0061sk"`), so the scan compares keys as
// it does and refuses lines with repeated keys or with any backslash. It reads only valid
// JSON, so that its view of where strings, keys and values begin and end is the
// decoder's, and valid UTF-8 (json.Valid lets invalid UTF-8 in strings pass, which the
// task layer answers).
func plainToolsCall(line []byte) bool {
	_, ok := plainCallID(line)
	return ok
}

// plainCallID is plainToolsCall, returning the call's id as it is in line.
func plainCallID(line []byte) (id []byte, ok bool) {
	// The method is matched byte for byte: a line without it is no plain call, and is told
	// so before the validity checks read it all.
	if !bytes.Contains(line, toolsCallMethod) || bytes.IndexByte(line, '\\') >= 0 || !utf8.Valid(line) || !json.Valid(line) {
		return nil, false
	}
	var methods, ids, params int
	ok = eachMember(line, func(key, val []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("method")):
			methods++
			return bytes.Equal(val, toolsCallMethod)
		case bytes.EqualFold(key, []byte("id")):
			ids++
			id = val
			return val[0] == '"' || val[0] == '-' || ('0' <= val[0] && val[0] <= '9')
		case bytes.EqualFold(key, []byte("params")):
			params++
			return plainCallParams(val)
		case bytes.EqualFold(key, []byte("result")), bytes.EqualFold(key, []byte("error")):
			return false // a reply's members: mcp-go may take the line as one
		}
		return true
	})
	return id, ok && methods == 1 && ids == 1 && params <= 1
}

// toolsCallMethod is the method member's value of a tools/call, as plainToolsCall takes it.
var toolsCallMethod = []byte(`"` + mcp.MethodToolsCall + `"`)

// plainCallParams reports whether a tools/call's params (valid JSON, no backslash) ask
// for no task: no task member (2025-11-25), no tasks extension among the client's
// capabilities in _meta (2026-07-28; requestMeta).
func plainCallParams(val []byte) bool {
	return eachMember(val, func(key, v []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("task")):
			return false
		case bytes.EqualFold(key, []byte("_meta")):
			return eachMember(v, func(k, caps []byte) bool {
				return !bytes.EqualFold(k, []byte(metaClientCapabilities)) || withoutTasksExtension(caps)
			})
		}
		return true
	})
}

// metaClientCapabilities is the _meta member of a 2026-07-28 request that declares the
// client's capabilities (requestMeta).
const metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// withoutTasksExtension reports whether caps, the client's capabilities, are an object whose
// extensions, if any, are an object without TasksExtension.
func withoutTasksExtension(caps []byte) bool {
	return eachMember(caps, func(k, ext []byte) bool {
		return !bytes.EqualFold(k, []byte("extensions")) || eachMember(ext, func(name, _ []byte) bool {
			return !bytes.EqualFold(name, []byte(TasksExtension))
		})
	})
}

// eachMember calls fn with the key and the raw value of each member of the JSON object v,
// in order, until fn returns false. v must be valid JSON without a backslash, so that
// keys are their bytes and a string ends at its next quote. It reports false when v is
// not an object or fn returned false.
func eachMember(v []byte, fn func(key, val []byte) bool) bool {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return false
	}
	for i = skipSpace(v, i+1); i < len(v) && v[i] == '"'; {
		end := i + 1 + bytes.IndexByte(v[i+1:], '"')
		key := v[i+1 : end]
		start := skipSpace(v, skipSpace(v, end+1)+1) // past the colon
		i = skipValue(v, start)
		if !fn(key, v[start:i]) {
			return false
		}
		if i = skipSpace(v, i); i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
	return true
}

// skipSpace returns the index of the first byte of v at or after i that is not JSON space.
func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at v[i] (valid JSON, no
// backslash).
func skipValue(v []byte, i int) int {
	switch v[i] {
	case '"':
		return i + 2 + bytes.IndexByte(v[i+1:], '"')
	case '{', '[':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				i += 1 + bytes.IndexByte(v[i+1:], '"')
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(v) {
		switch v[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// stdioCalls runs the tools/calls of one stdio session on workers of its own, in the
// context mcp-go's stdio server serves the session in (its session, the principal), as
// mcp-go's tool call workers would; a call finding no idle worker starts one, so calls that
// wait for their runs never hold up others. At most MaxStdioCalls run at once; the ones
// past it wait in a queue of MaxQueuedStdioCalls for the next worker free, and past that the
// read loop waits, so a client sending calls faster than they end cannot make the process
// hold them all. The counts are kept under mu, which taking and forgetting a call hold
// anyway: a worker done with a call takes the first queued one in its place before the call
// counts as ended, so no call taken meanwhile can run beside it past the bound.
//
// The read loop registers each call it takes under its request ID before any later line is
// read, and answers a notifications/cancelled naming it (cancel) by cancelling the call's
// context: the cancel reaches the call in line order, whether the call runs, waits in the
// queue or has not yet reached MCPServer.HandleMessage (whose own registration, made on the
// worker, a cancel read meanwhile would miss).
type stdioCalls struct {
	s   *Server
	env *environment
	out *lineWriter
	// work hands calls to the idle workers: it holds at most as many as idle counted
	// (next), so a send to it never waits, even for a worker gone with the session.
	work chan *stdioCall
	// queue holds the calls taken past MaxStdioCalls, for the next worker free; it is sent
	// to and received from under mu only, when it has room or a call.
	queue chan *stdioCall

	mu      sync.Mutex
	ctx     context.Context // nil until the session is served, and after stop
	cancel  context.CancelFunc
	stopped bool
	calls   map[string]*stdioCall // the calls taken and not yet answered, by callKey
	running int                   // calls on workers, queued ones not counted: at most MaxStdioCalls
	idle    int                   // idle workers not yet handed a call: at most maxIdleStdioWorkers
	room    chan struct{}         // while the read loop waits for room in queue: closed once there is
	wg      sync.WaitGroup
}

// stdioCall is one tools/call taken: its line, and its context, which a
// notifications/cancelled naming its request ID cancels (errCallCancelled).
type stdioCall struct {
	key    string
	line   []byte
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// errCallCancelled is the cause of a call's context cancelled by the client.
var errCallCancelled = errors.New("the client cancelled the request")

// maxIdleStdioWorkers is how many of a stdio session's workers wait for the next call
// once they answered one; the others end. A worker keeps the stack its calls grew (the
// SQLite of an admission, transpiled C, needs a deep one): with a new goroutine per call,
// growing it again took ~50 µs of CPU a call. (mcp-go's stdio server keeps 5 workers.)
const maxIdleStdioWorkers = 16

// MaxStdioCalls bounds the tools/calls a stdio session runs at once on its own workers; the
// ones beyond it wait in a queue (MaxQueuedStdioCalls).
const MaxStdioCalls = 64

// MaxQueuedStdioCalls bounds the tools/calls of a stdio session waiting for one of the
// MaxStdioCalls to end; past it the session reads no more lines until one does (as
// mcp-go's stdio server, whose queue holds 100, does).
const MaxQueuedStdioCalls = 100

func newStdioCalls(s *Server, env *environment, out *lineWriter) *stdioCalls {
	return &stdioCalls{s: s, env: env, out: out, work: make(chan *stdioCall, maxIdleStdioWorkers),
		queue: make(chan *stdioCall, MaxQueuedStdioCalls), calls: map[string]*stdioCall{}}
}

// serve is the stdio server's context function: it learns the session's context.
func (c *stdioCalls) serve(ctx context.Context) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.ctx, c.cancel = context.WithCancel(ctx)
	}
	return ctx
}

// take answers line when it is a plain tools/call (see plainToolsCall) of an initialised
// session, and reports whether it did.
func (c *stdioCalls) take(line []byte) bool {
	id, ok := plainCallID(line)
	return ok && c.takeCall(line, id)
}

// takeCall answers line, a tools/call request with ID id that mcp-go's stdio reader would
// hand to MCPServer.HandleMessage as it is, when the session is initialised, and reports
// whether it did: on an idle worker or a new one, else, past MaxStdioCalls, through the
// queue, waiting while it is full. Until notifications/initialized, which mcp-go reads in
// line order, the call goes the same way, behind it. (mcp-go has one stdio session per
// process.)
func (c *stdioCalls) takeCall(line, id []byte) bool {
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
	call := &stdioCall{key: key, line: line}
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

// dispatch hands call to an idle worker or a new one while fewer than MaxStdioCalls run,
// else queues it, and reports false when the queue is full. c.mu is held, so that stop,
// once it has taken ctx, waits for every worker started. The queue holds calls only while
// MaxStdioCalls run (next), so a call never starts ahead of one queued.
func (c *stdioCalls) dispatch(ctx context.Context, call *stdioCall) bool {
	switch {
	case c.running < MaxStdioCalls:
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

// cancelCall answers a notifications/cancelled naming requestID, read in line order: it
// cancels the call taken under that ID and reports whether there was one. A cancel naming
// another request is mcp-go's, unless that request's ID has the text of one of the calls'
// (the string "1" and the call 1, true and the call "true"): mcp-go keys the requests it
// cancels by their ID's text (fmt's %v of the ID decoded), whatever its type, so it would
// cancel that call, which the cancel does not name. Such a cancel is dropped.
func (c *stdioCalls) cancelCall(requestID json.RawMessage) bool {
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

// callKey is the key of a request ID (a JSON string or number) in stdioCalls.calls: IDs
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
func (c *stdioCalls) worker(ctx context.Context, call *stdioCall) {
	for call != nil {
		c.answer(call)
		call = c.next(ctx, call)
	}
}

// next forgets done, answered, and returns the call the worker answers next: the first
// queued, which takes done's place among the MaxStdioCalls; else, when the worker is one of
// the maxIdleStdioWorkers kept, the next handed to it; else, or once ctx ends, nil.
func (c *stdioCalls) next(ctx context.Context, done *stdioCall) *stdioCall {
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
	kept := c.idle+len(c.work) < maxIdleStdioWorkers
	if kept {
		c.idle++
	}
	c.mu.Unlock()
	done.cancel(nil)
	if !kept {
		return nil
	}
	if c.s.stdioWorkerIdle != nil {
		c.s.stdioWorkerIdle()
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
func (c *stdioCalls) answer(call *stdioCall) {
	if c.cancelled(call) {
		return
	}
	if c.s.beforeStdioCall != nil {
		c.s.beforeStdioCall(c)
	}
	resp := c.call(call.ctx, call.line)
	if resp == nil || c.cancelled(call) {
		return
	}
	if err := c.out.sendErr(resp); err != nil {
		c.s.log.Error("mcp: writing a tool response", "err", err)
	}
}

// cancelled reports whether the client cancelled call.
func (c *stdioCalls) cancelled(call *stdioCall) bool {
	return errors.Is(context.Cause(call.ctx), errCallCancelled)
}

// finish forgets call, dropped.
func (c *stdioCalls) finish(call *stdioCall) {
	c.mu.Lock()
	c.forget(call)
	c.mu.Unlock()
	call.cancel(nil)
}

// forget removes call from c.calls, unless a later call took its key. c.mu is held.
func (c *stdioCalls) forget(call *stdioCall) {
	if c.calls[call.key] == call {
		delete(c.calls, call.key)
	}
}

// call is MCPServer.HandleMessage, a panic answered as mcp-go's stdio workers answer one.
func (c *stdioCalls) call(ctx context.Context, line []byte) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("mcp: panic recovered in a stdio tool call", "panic", r)
			var msg struct {
				ID any `json:"id"`
			}
			_ = json.Unmarshal(line, &msg)
			detail := mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r), nil)
			resp = mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(msg.ID), Error: detail}
		}
	}()
	return c.env.mcp.HandleMessage(ctx, line)
}

// stop cancels the calls still running, as mcp-go cancels its workers' when its input
// ends, waits for them, and takes no more.
func (c *stdioCalls) stop() {
	c.mu.Lock()
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	}
	c.ctx = nil
	c.mu.Unlock()
	c.wg.Wait()
}
