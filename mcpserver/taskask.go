package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/mcpserver/front"
	"github.com/gorunner/gorunner/runner"
)

// Asking while a task is awaited (protocol 2025-11-25). A client that sees a task
// input_required calls tasks/result and expects the server's questions on that request's
// stream. The task layer answers tasks/result itself, outside mcp-go, so it also sends
// these requests itself (front.Link) and the front layer takes their replies, which the
// client sends back as separate messages, before they reach mcp-go (front.Replies).

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
func (s *Server) askOverLink(ctx context.Context, l *front.Link, run *runner.Run, ask *pendingAsk) (bool, error) {
	message := ask.message
	for {
		raw, err := l.Request(ctx, string(mcp.MethodElicitationCreate), map[string]any{
			"message": message, "requestedSchema": ask.schema,
			"_meta": mcp.WithRelatedTask(run.ID).AdditionalFields,
		})
		if err != nil {
			return false, err
		}
		var res mcp.ElicitationResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return false, errors.Join(front.ErrNoAnswer, err)
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
