package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/runner"
)

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
