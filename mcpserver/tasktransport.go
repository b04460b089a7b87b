package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
)

// sessionHeader is the streamable HTTP session header.
const sessionHeader = "Mcp-Session-Id"

// taskHTTP answers the task requests POSTed to env's /mcp and hands every other request to
// mcp-go unchanged.
func (s *Server) taskHTTP(env *environment) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
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
		var msg rpcMessage
		if json.Unmarshal(body, &msg) != nil || !isTaskRequest(&msg) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			env.http.ServeHTTP(w, r)
			return
		}
		// guard has refused another principal's session ID.
		resp := s.answerTask(r.Context(), env, r.Header.Get(sessionHeader), &msg)
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(resp); err != nil {
			s.log.Debug("mcp: writing a task answer failed", "err", err)
		}
	})
}

// stdioSessionID is the ID mcp-go gives its one stdio session.
const stdioSessionID = "stdio"

// taskStdio answers the task requests read from in by writing to out, and passes every
// other line on through the returned reader; mcp-go must write to out through the same
// lineWriter so that whole messages never interleave. It runs until in ends or ctx is
// done.
func (s *Server) taskStdio(ctx context.Context, env *environment, in io.Reader, out *lineWriter) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		var wg sync.WaitGroup
		defer func() {
			wg.Wait()
			pw.Close()
		}()
		rd := bufio.NewReaderSize(in, 64<<10)
		for ctx.Err() == nil {
			line, err := rd.ReadBytes('\n')
			if len(line) > 0 {
				var msg rpcMessage
				if !utf8.Valid(line) {
					answer, _ := invalidUTF8Answer(line)
					out.send(answer)
				} else if json.Unmarshal(line, &msg) == nil && isTaskRequest(&msg) {
					wg.Go(func() { out.send(s.answerTask(ctx, env, stdioSessionID, &msg)) })
				} else if _, werr := pw.Write(line); werr != nil {
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
func (l *lineWriter) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	_, _ = l.Write(append(b, '\n'))
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
		last := taskOf(run)
		for {
			select {
			case r, ok := <-states:
				if !ok {
					return
				}
				t := taskOf(r)
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
