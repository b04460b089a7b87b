package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
)

// sessionHeader is the streamable HTTP session header.
const sessionHeader = "Mcp-Session-Id"

// taskHTTP answers the task requests POSTed to env's /mcp, and the replies to the
// requests it sent, and hands every other request to mcp-go unchanged; a plain tools/call
// (plainToolsCall) goes to mcp-go without being decoded here.
func (s *Server) taskHTTP(env *environment) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			if s.endedSession(w, r, env) {
				return
			}
			env.http.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limits.MaxBodyBytes))
		if err != nil {
			http.Error(w, "reading the request: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if !utf8.Valid(body) {
			refuseInvalidUTF8(w, body) // nothing reaches a handler
			return
		}
		if isBatch(body) {
			s.serveBatch(w, r, env, body)
			return
		}
		s.serveMessage(w, r, env, body)
	})
}

// serveMessage answers body, one JSON-RPC message POSTed to env's /mcp: a reply to a
// request the task layer sent, a task request, or anything else, which mcp-go answers.
func (s *Server) serveMessage(w http.ResponseWriter, r *http.Request, env *environment, body []byte) {
	var msg rpcMessage
	if !plainToolsCall(body) && json.Unmarshal(body, &msg) == nil {
		// guard has refused another principal's session ID.
		if msg.Method == "" && s.replies.deliver(principalID(r.Context()), body) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if c, ok := s.taskCallOf(r.Context(), env, &msg); ok {
			s.serveTaskCall(w, r, c)
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	env.http.ServeHTTP(w, r)
	if p, ok := auth.PrincipalFrom(r.Context()); ok && msg.Method == string(mcp.MethodInitialize) {
		s.endExcessSessions(r, env, p)
	}
}

// serveTaskCall answers c over HTTP: as JSON, or as an event stream once the answer sends
// the client a request of its own.
func (s *Server) serveTaskCall(w http.ResponseWriter, r *http.Request, c *taskCall) {
	a := &httpAnswer{w: w}
	if c.meta.modern() {
		if problem := headerMismatch(r.Header, c); problem != "" {
			a.finish(rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: c.msg.ID, Error: &rpcError{Code: mcp.HEADER_MISMATCH, Message: problem}}, true)
			return
		}
	} else {
		c.sessionID = r.Header.Get(sessionHeader)
		if problem, status := legacySessionProblem(r, c.env, c.sessionID); status != 0 {
			http.Error(w, problem, status)
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			s.linkClient(r.Context(), c, a.send)
		}
	}
	a.finish(s.answerTask(r.Context(), c), c.meta.modern())
}

// legacySessionProblem refuses a 2025-11-25 request as mcp-go refuses one it serves
// (tools/call and the rest), so that the task methods need the same handshake: a protocol
// version header it does not know is a 400, and a request needs the Mcp-Session-Id that
// initialize minted for its principal (a missing or foreign one is a 404). It returns
// the problem and its status, or 0; a terminated session is a 404 too. The 2026-07-28
// requests are stateless by design.
func legacySessionProblem(r *http.Request, env *environment, sessionID string) (string, int) {
	if v := r.Header.Get(server.HeaderKeyProtocolVersion); v != "" && !mcp.IsValidProtocolVersion(v) {
		return "Unsupported protocol version: " + v, http.StatusBadRequest
	}
	terminated, err := env.sessions.ResolveSessionIdManager(r).Validate(sessionID)
	switch {
	case err != nil:
		return "Invalid session ID", http.StatusNotFound
	case terminated:
		return "Session terminated", http.StatusNotFound
	}
	return "", 0
}

// endedSession answers 404 to a GET or DELETE naming a session of the caller's that env
// does not hold (ended, or opened on another process), as mcp-go answers a POST
// (boundSessions.Validate): mcp-go would open a new stream under the ID of a GET, and
// answer a DELETE 200. It reports whether it answered.
func (s *Server) endedSession(w http.ResponseWriter, r *http.Request, env *environment) bool {
	id := r.Header.Get(sessionHeader)
	if id == "" || s.held.holds(env.name, principalID(r.Context()), id) {
		return false
	}
	http.Error(w, "Session terminated", http.StatusNotFound)
	return true
}

// headerMismatch checks the headers a 2026-07-28 request over HTTP must carry (SEP-2243):
// the protocol version and method of the body, and its tool name or task ID. It returns
// what is wrong, or "".
func headerMismatch(h http.Header, c *taskCall) string {
	var p struct {
		Name   string `json:"name"`
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(c.msg.Params, &p)
	name := p.TaskID // a task method names its task; a tools/call its tool
	if c.msg.Method == string(mcp.MethodToolsCall) {
		name = p.Name
	}
	want := [][2]string{{"Mcp-Protocol-Version", c.meta.ProtocolVersion}, {"Mcp-Method", c.msg.Method}, {"Mcp-Name", name}}
	for _, hv := range want {
		if got := h.Get(hv[0]); got != hv[1] {
			return fmt.Sprintf("header %s is %q, the request says %q", hv[0], got, hv[1])
		}
	}
	return ""
}

// httpAnswer writes the answer to one task request.
type httpAnswer struct {
	w         http.ResponseWriter
	streaming bool
}

// send writes msg as a server-sent event, switching the answer to an event stream.
func (a *httpAnswer) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if !a.streaming {
		a.w.Header().Set("Content-Type", "text/event-stream")
		a.w.Header().Set("Cache-Control", "no-cache")
		a.w.WriteHeader(http.StatusOK)
		a.streaming = true
	}
	if _, err := fmt.Fprintf(a.w, "event: message\ndata: %s\n\n", b); err != nil {
		return err
	}
	return http.NewResponseController(a.w).Flush()
}

// finish writes the response: the last event of a stream, or a JSON body. A 2026-07-28
// error answer has the HTTP status that protocol gives its code.
func (a *httpAnswer) finish(resp rpcResponse, modern bool) {
	if a.streaming {
		_ = a.send(resp)
		return
	}
	status := http.StatusOK
	if modern && resp.Error != nil {
		switch resp.Error.Code {
		case codeMethod:
			status = http.StatusNotFound
		case codeInvalidParams, codeMissingCapability, mcp.HEADER_MISMATCH:
			status = http.StatusBadRequest
		}
	}
	a.w.Header().Set("Content-Type", "application/json")
	a.w.WriteHeader(status)
	_ = json.NewEncoder(a.w).Encode(resp)
}

// linkClient lets the answer to c ask its client, through send, when c's 2025-11-25
// session declared elicitation.
func (s *Server) linkClient(ctx context.Context, c *taskCall, send func(msg any) error) {
	if s.elicitors.can(c.sessionID) {
		c.client = &clientLink{send: send, replies: &s.replies, principal: principalID(ctx)}
	}
}

// principalID is the ID of the principal in ctx, or "".
func principalID(ctx context.Context) string {
	p, _ := auth.PrincipalFrom(ctx)
	return p.ID
}

// stdioSessionID is the ID mcp-go gives its one stdio session.
const stdioSessionID = "stdio"

// taskStdio answers the task requests read from in, and the replies to the requests it
// sent, by writing to out, and passes every other line on through the returned reader;
// mcp-go must write to out through the same lineWriter so that whole messages never
// interleave. It runs until in ends or ctx is done.
func (s *Server) taskStdio(ctx context.Context, env *environment, in io.Reader, out *lineWriter, calls *stdioCalls) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		var wg sync.WaitGroup
		defer func() {
			wg.Wait()
			calls.stop()
			pw.Close()
		}()
		rd := bufio.NewReaderSize(in, 64<<10)
		for ctx.Err() == nil {
			line, rest, err := readLine(rd)
			if errors.Is(err, errLineTooLong) {
				out.send(lineTooLongAnswer)
				err = nil
				if rest {
					err = skipLine(rd)
				}
			}
			if len(line) > 0 && !calls.take(line) && !s.takeStdioLine(ctx, env, &wg, line, out, calls) {
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return pr
}

// MaxStdioLineBytes caps one JSON-RPC message read over stdio, as limits.MaxBodyBytes caps
// an HTTP request body. A longer line is answered with lineTooLongAnswer as soon as it
// passes the cap, and its rest is skipped up to its newline, never held. Messages are
// newline-delimited and hold no newline, so what follows is the next message: the session
// goes on.
const MaxStdioLineBytes = limits.MaxBodyBytes

// errLineTooLong: a line passed MaxStdioLineBytes.
var errLineTooLong = errors.New("the message is longer than the stdio limit")

// lineTooLongAnswer answers a line over MaxStdioLineBytes. Its id is null: the id may be
// in the part of the line that is not kept.
var lineTooLongAnswer = rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: json.RawMessage("null"), Error: &rpcError{
	Code: mcp.INVALID_REQUEST, Message: fmt.Sprintf("the message is longer than %d bytes; it is skipped up to its newline", MaxStdioLineBytes)}}

// readLine reads one line, its newline included, holding at most MaxStdioLineBytes of it;
// past that it returns errLineTooLong at once, and rest says whether the line goes on
// (skipLine skips it).
func readLine(rd *bufio.Reader) (line []byte, rest bool, err error) {
	for {
		chunk, err := rd.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if len(line)+len(chunk) > MaxStdioLineBytes {
			return nil, full, errLineTooLong
		}
		line = append(line, chunk...)
		if !full {
			return line, false, err
		}
	}
}

// skipLine reads up to and through the next newline, holding none of it.
func skipLine(rd *bufio.Reader) error {
	for {
		_, err := rd.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// takeStdioLine answers line when it is invalid UTF-8, a task request (in its own
// goroutine, on wg), a reply to the task layer, a tools/call that calls takes although
// plainToolsCall could not tell it, or a notifications/cancelled of one of calls' calls,
// and reports whether it did; other lines are mcp-go's.
func (s *Server) takeStdioLine(ctx context.Context, env *environment, wg *sync.WaitGroup, line []byte, out *lineWriter, calls *stdioCalls) bool {
	if !utf8.Valid(line) {
		answer, _ := invalidUTF8Answer(line)
		out.send(answer)
		return true
	}
	var msg rpcMessage
	if json.Unmarshal(line, &msg) != nil {
		return false
	}
	switch {
	case msg.Method == "":
		return s.replies.deliver(principalID(ctx), line)
	case msg.Method == string(mcp.MethodNotificationCancelled) && (len(msg.ID) == 0 || string(msg.ID) == "null"):
		// mcp-go takes a message with a null id for a notification too.
		return calls.cancelCall(cancelledRequest(msg.Params))
	}
	c, ok := s.taskCallOf(ctx, env, &msg)
	if !ok {
		// mcp-go's reader would queue any tools/call for HandleMessage (it sends the client
		// no request whose reply it could be); the session's workers take it instead, so
		// that a cancel of it is heard in line order.
		return msg.Method == string(mcp.MethodToolsCall) && calls.takeCall(line, msg.ID)
	}
	if !c.meta.modern() {
		c.sessionID = stdioSessionID
		s.linkClient(ctx, c, out.sendErr)
	}
	wg.Go(func() { out.send(s.answerTask(ctx, c)) })
	return true
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

// lineWriter writes whole newline-terminated messages, one at a time.
type lineWriter struct {
	mu  sync.Mutex
	out io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.Write(p)
}

// send writes v as one JSON line.
func (l *lineWriter) send(v any) { _ = l.sendErr(v) }

// sendErr is send, saying whether it failed.
func (l *lineWriter) sendErr(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = l.Write(append(b, '\n'))
	return err
}

// notifyTaskStatus sends notifications/tasks/status to the session whenever the task of
// run changes, until the run ends, the session is gone or the server stops.
func (s *Server) notifyTaskStatus(env *environment, sessionID string, run *runner.Run) {
	if run.Status.Terminal() {
		return
	}
	s.tasks.Go(func() {
		states, stop := s.deps.Engine.Watch(run.ID)
		defer stop()
		last := s.taskOf(run)
		for {
			select {
			case r, ok := <-states:
				if !ok {
					return
				}
				t := s.taskOf(r)
				if t.Status == last.Status && t.StatusMessage == last.StatusMessage {
					continue
				}
				last = t
				if err := s.sendTaskStatus(env, sessionID, t); err != nil {
					return
				}
			case <-s.tasksCtx.Done():
				return
			}
		}
	})
}

// sendTaskStatus sends one notifications/tasks/status.
func (s *Server) sendTaskStatus(env *environment, sessionID string, t mcp.Task) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil {
		return err
	}
	err = env.mcp.SendNotificationToSpecificClient(sessionID, string(mcp.MethodNotificationTasksStatus), params)
	if err != nil && !errors.Is(err, context.Canceled) {
		s.log.Debug("mcp: task status notification not sent", "task", t.TaskId, "err", err)
	}
	return err
}
