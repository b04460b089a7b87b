package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/mcpserver/front"
)

// sessionHeader is the streamable HTTP session header.
const sessionHeader = "Mcp-Session-Id"

// httpTransport serves one environment's /mcp: each message POSTed goes through the
// environment's router (a batch, which 2025-03-26 allows, message by message), and what
// it does not take goes to mcp-go's streamable HTTP server unchanged; a GET or DELETE goes
// to mcp-go once its session is known to be held.
type httpTransport struct {
	env *environment
	// held are the sessions each principal holds, in every environment.
	held *sessionsHeld
}

func (t *httpTransport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if t.endedSession(w, r) {
			return
		}
		t.env.http.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limits.MaxBodyBytes))
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	if front.IsBatch(body) && utf8.Valid(body) {
		t.serveBatch(w, r, body)
		return
	}
	t.serveMessage(w, r, body)
}

// serveMessage answers body, one JSON-RPC message POSTed, through the router; what the
// router passes on mcp-go answers.
func (t *httpTransport) serveMessage(w http.ResponseWriter, r *http.Request, body []byte) {
	// guard has refused another principal's session ID.
	c := &httpConn{w: w, r: r, env: t.env}
	switch outcome, msg := t.env.router.Route(r.Context(), body, c); outcome {
	case front.Taken:
		w.WriteHeader(http.StatusAccepted)
	case front.Pass:
		r.Body = io.NopCloser(bytes.NewReader(body))
		t.env.http.ServeHTTP(w, r)
		if p, ok := auth.PrincipalFrom(r.Context()); ok && msg != nil && msg.Method == string(mcp.MethodInitialize) {
			t.endExcessSessions(r, p)
		}
	}
}

// httpConn is the HTTP side of one POSTed message (front.Conn): its answer is the
// response, as JSON, or as an event stream once the server sends the client a request.
type httpConn struct {
	w         http.ResponseWriter
	r         *http.Request
	env       *environment
	streaming bool
}

// Admit checks a task request as mcp-go checks the requests it serves: a 2026-07-28 one
// carries the headers SEP-2243 asks for; a 2025-11-25 one the session its initialize
// opened. Its client can be asked when it accepts an event stream.
func (c *httpConn) Admit(t front.Task, msg *front.Message) (string, bool, bool) {
	if v := t.Version(); mcp.IsModernProtocol(v) {
		if problem := headerMismatch(c.r.Header, v, msg); problem != "" {
			c.Reply(front.Reply{Msg: front.Answer(msg.ID, nil, front.NewError(mcp.HEADER_MISMATCH, problem, nil)), Modern: true})
			return "", false, false
		}
		return "", false, true
	}
	session := c.r.Header.Get(sessionHeader)
	if problem, status := legacySessionProblem(c.r, c.env, session); status != 0 {
		http.Error(c.w, problem, status)
		return "", false, false
	}
	return session, strings.Contains(c.r.Header.Get("Accept"), "text/event-stream"), true
}

// Go answers at once: the handler writes the answer before it returns.
func (c *httpConn) Go(answer func()) { answer() }

// Calls: mcp-go's streamable HTTP transport runs the tool calls.
func (c *httpConn) Calls() *front.Calls { return nil }

// Send writes msg as a server-sent event, switching the answer to an event stream.
func (c *httpConn) Send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if !c.streaming {
		c.w.Header().Set("Content-Type", "text/event-stream")
		c.w.Header().Set("Cache-Control", "no-cache")
		c.w.WriteHeader(http.StatusOK)
		c.streaming = true
	}
	if _, err := fmt.Fprintf(c.w, "event: message\ndata: %s\n\n", b); err != nil {
		return err
	}
	return http.NewResponseController(c.w).Flush()
}

// Reply writes the response: the last event of a stream, or a JSON body. A refusal is a
// 400; a 2026-07-28 error answer has the HTTP status that protocol gives its code.
func (c *httpConn) Reply(rp front.Reply) {
	if c.streaming {
		_ = c.Send(rp.Msg)
		return
	}
	status := http.StatusOK
	if e, ok := rp.Msg.(mcp.JSONRPCError); ok && rp.Modern {
		switch e.Error.Code {
		case mcp.METHOD_NOT_FOUND:
			status = http.StatusNotFound
		case mcp.INVALID_PARAMS, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.HEADER_MISMATCH:
			status = http.StatusBadRequest
		}
	}
	if rp.Refused {
		status = http.StatusBadRequest
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	_ = json.NewEncoder(c.w).Encode(rp.Msg)
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

// endedSession answers 404 to a GET or DELETE naming a session of the caller's that the
// environment does not hold (ended, or opened on another process), as mcp-go answers a
// POST (boundSessions.Validate): mcp-go would open a new stream under the ID of a GET, and
// answer a DELETE 200. It reports whether it answered.
func (t *httpTransport) endedSession(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get(sessionHeader)
	if id == "" || t.held.holds(t.env.name, principalID(r.Context()), id) {
		return false
	}
	http.Error(w, "Session terminated", http.StatusNotFound)
	return true
}

// headerMismatch checks the headers a 2026-07-28 request (of protocol version) over HTTP
// must carry (SEP-2243): the protocol version and method of the body, and its tool name
// or task ID. It returns what is wrong, or "".
func headerMismatch(h http.Header, version string, msg *front.Message) string {
	var p struct {
		Name   string `json:"name"`
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	name := p.TaskID // a task method names its task; a tools/call its tool
	if msg.Method == string(mcp.MethodToolsCall) {
		name = p.Name
	}
	want := [][2]string{{"Mcp-Protocol-Version", version}, {"Mcp-Method", msg.Method}, {"Mcp-Name", name}}
	for _, hv := range want {
		if got := h.Get(hv[0]); got != hv[1] {
			return fmt.Sprintf("header %s is %q, the request says %q", hv[0], got, hv[1])
		}
	}
	return ""
}

// principalID is the ID of the principal in ctx, or "".
func principalID(ctx context.Context) string {
	p, _ := auth.PrincipalFrom(ctx)
	return p.ID
}
