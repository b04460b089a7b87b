package mcpserver

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/runner"
)

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

// watchProgress starts reporting run's finished steps to the caller of ctx.
func (s *Server) watchProgress(ctx context.Context, token mcp.ProgressToken, run *runner.Run) *progress {
	states, stop := s.deps.Engine.Watch(run.ID)
	p := &progress{ctx: ctx, s: s, token: token, reported: map[string]bool{}, stopSrc: stop, done: make(chan struct{})}
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
	if final != nil {
		p.report(final)
	}
	p.flush()
}

// flushWait bounds how long flush waits for the transport to take the notifications.
const flushWait = 100 * time.Millisecond

// flush waits until the session's notification queue is empty. mcp-go's streamable HTTP
// transport drops a notification its forwarder took off the queue but had not written when
// the response went out; the last step's notification, sent just before the result, would
// often be lost without this.
func (p *progress) flush() {
	session := server.ClientSessionFromContext(p.ctx)
	if session == nil {
		return
	}
	ch := session.NotificationChannel()
	deadline := time.Now().Add(flushWait)
	for len(ch) > 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
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
	println("DEBUG send", message)
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
