package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// MaxProgressTokenLength bounds a call's progressToken written out (a string's bytes, a
// number's digits): every progress notification of the call echoes it, one per step.
const MaxProgressTokenLength = 256

// progressTokenProblem is the isError result of a call whose _meta.progressToken is not
// what MCP allows (a string or a number) or is longer than MaxProgressTokenLength; nil
// when it is fine or absent. The call is refused before it starts anything.
func progressTokenProblem(req mcp.CallToolRequest) *mcp.CallToolResult {
	token, ok := progressToken(req)
	if !ok {
		return nil
	}
	var n int
	switch t := token.(type) {
	case string:
		n = len(t)
	case json.Number:
		n = len(t)
	case float64, int, int64:
		return nil
	default:
		return badProgressToken("must be a string or a number")
	}
	if n > MaxProgressTokenLength {
		return badProgressToken(fmt.Sprintf("must be at most %d bytes long, got %d", MaxProgressTokenLength, n))
	}
	return nil
}

func badProgressToken(why string) *mcp.CallToolResult {
	msg := "_meta.progressToken " + why + "; send a short string or a number, or none"
	return tools.Problem{Status: http.StatusBadRequest, Code: problem.CodeValidation, Message: msg,
		Details: []schemas.Problem{{Path: "/_meta/progressToken", Message: msg}}}.Result()
}

// progress sends one notifications/progress per finished step of a run while a tool call
// waits for it.
type progress struct {
	ctx      context.Context
	s        *Server
	token    mcp.ProgressToken
	reported map[string]bool // step IDs already reported
	stopSrc  func()
	done     chan struct{}
}

// newProgress reports to the caller of ctx under token; nothing is watched yet.
func (s *Server) newProgress(ctx context.Context, token mcp.ProgressToken) *progress {
	return &progress{ctx: ctx, s: s, token: token, reported: map[string]bool{}}
}

// watchProgress starts reporting run's finished steps to the caller of ctx.
func (s *Server) watchProgress(ctx context.Context, token mcp.ProgressToken, run *runner.Run) *progress {
	p := s.newProgress(ctx, token)
	states, stop := s.deps.Engine.Watch(run.ID)
	p.stopSrc, p.done = stop, make(chan struct{})
	p.report(run)
	go func() {
		defer close(p.done)
		for r := range states {
			p.report(r)
		}
	}()
	return p
}

// stop ends the watch and reports the steps final shows finished that the watch had not
// yet seen, so that none is missed however the wait ended.
func (p *progress) stop(final *runner.Run) {
	p.stopSrc()
	<-p.done
	p.finish(final)
}

// finish reports the steps final (if any) shows finished that were not reported yet, and
// lets the transport send them before the result goes out.
func (p *progress) finish(final *runner.Run) {
	if final != nil {
		p.report(final)
	}
	p.flush()
}

// flushWait bounds how long flush waits for the transport to take the notifications;
// flushGrace is how long it then lets the transport write the last one.
const (
	flushWait  = 100 * time.Millisecond
	flushGrace = 10 * time.Millisecond
)

// flush lets the transport send the queued notifications before the result goes out.
// mcp-go's streamable HTTP transport drops a notification that its forwarder took off the
// session queue but had not yet written when the response is written; without this the
// last step's notification, queued just before the result, is often lost.
func (p *progress) flush() {
	session := server.ClientSessionFromContext(p.ctx)
	if session == nil {
		return
	}
	queue := session.NotificationChannel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(flushWait)
	for len(queue) > 0 {
		select {
		case <-tick.C:
		case <-deadline:
			return
		}
	}
	grace := time.NewTimer(flushGrace)
	defer grace.Stop()
	<-grace.C
}

// report notifies every step of r that finished since the last report.
func (p *progress) report(r *runner.Run) {
	for _, st := range r.Steps {
		if p.reported[st.ID] || !stepFinished(st.Status) {
			continue
		}
		p.reported[st.ID] = true
		p.send(len(p.reported), len(r.Steps), fmt.Sprintf("step %s %s", st.ID, st.Status))
	}
}

func (p *progress) send(done, total int, message string) {
	srv := server.ServerFromContext(p.ctx)
	if srv == nil {
		return
	}
	err := srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), map[string]any{
		"progressToken": p.token,
		"progress":      done,
		"total":         total,
		"message":       message,
	})
	if err != nil {
		p.s.log.Debug("mcp: progress notification not sent", "err", err)
	}
}

func stepFinished(st runner.StepStatus) bool {
	switch st {
	case runner.StepCompleted, runner.StepFailed, runner.StepSkipped, runner.StepCancelled:
		return true
	}
	return false
}
