package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/problem"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// MaxAskAttempts is how many times one hook's ask is put to the person while the answers
// do not fit its schema; then the call answers with the waiting run, as for a client
// without elicitation.
const MaxAskAttempts = 3

// pendingAsk is the ask of the hook a waiting run waits on.
type pendingAsk struct {
	step    int    // index of the hook step
	key     string // its key among a task's input requests: the step's ID, unique in the run
	token   string
	message string
	schema  json.RawMessage
	input   *schemas.InputSchema
}

// askOf is the ask of the hook run waits on while it is put to the person: nil when it
// waits on none that asks, or on one whose ask MaxAskAttempts answers did not fit.
func (s *Server) askOf(run *runner.Run) (*pendingAsk, error) {
	if !waitsOnHook(run) {
		return nil, nil
	}
	pos, err := positionOf(run)
	if err != nil {
		return nil, err
	}
	return s.askAt(run, pos)
}

// waitsOnHook reports whether run is waiting on a hook.
func waitsOnHook(run *runner.Run) bool {
	return run.Status == runner.StatusWaiting && run.WaitingOn != nil && run.WaitingOn.Hook != ""
}

// asks reports whether run, standing at pos, waits on a hook whose ask is still put to
// the person: after MaxAskAttempts answers that did not fit (in any of the ways of
// asking: a tool call's question, a tasks/result stream, tasks/update, on any process
// sharing the store), it no longer is — the question is withdrawn — and the hook waits
// for gorunner_resume_hook or the REST resume as for a client without elicitation. The
// count is the run's own (Run.AskMisses), so every process reads the same answer.
func (s *Server) asks(run *runner.Run, pos position) bool {
	return waitsOnHook(run) && run.WaitingOn.Ask != nil && pos.step != nil && run.AskMisses.At(pos.index) < MaxAskAttempts
}

// missAnswer counts one more answer to ask, of run, that did not fit, on the run (so that
// every process counts it and follows the question's withdrawal, notifications/tasks/status
// included), and returns the count; for a run that ended meanwhile, which is asked no
// more, MaxAskAttempts.
func (s *Server) missAnswer(ctx context.Context, run *runner.Run, ask *pendingAsk) (int, error) {
	n, err := s.deps.Engine.MissAsk(context.WithoutCancel(ctx), run.ID, ask.step)
	if errors.Is(err, runner.ErrFinished) {
		return MaxAskAttempts, nil
	}
	return n, err
}

// askAt is askOf for run standing at pos. The question is the run's own (WaitingOn.Ask,
// evaluated once when the hook began to wait), the one every face shows.
func (s *Server) askAt(run *runner.Run, pos position) (*pendingAsk, error) {
	if !s.asks(run, pos) {
		return nil, nil
	}
	a := run.WaitingOn.Ask
	compiled, err := schemas.CompileInput(a.Schema)
	if err != nil {
		return nil, fmt.Errorf("compiling the ask schema of step %s: %w", pos.step.ID, err)
	}
	return &pendingAsk{step: pos.index, key: pos.step.ID, token: run.WaitingOn.Hook, message: a.Message, schema: a.Schema, input: compiled}, nil
}

// decodeNumbers decodes JSON keeping numbers exact; empty is nil.
func decodeNumbers(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// canElicit reports whether the client of the request in ctx declared elicitation.
func canElicit(ctx context.Context) bool {
	session, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	return ok && session.GetClientCapabilities().Elicitation != nil
}

// askState is the requestState of an input_required tool result: which run and hook step
// the question is about, and how many times it has been asked. It goes out signed (see
// stateSigner); the client echoes it back with the answer; it is checked against the
// caller's runs, never trusted.
type askState struct {
	RunID    string `json:"runId"`
	Step     int    `json:"step"`
	Attempt  int    `json:"attempt"`
	Replayed bool   `json:"replayed,omitempty"`
	// sealed is the requestState as it came back, until continueAsk opens it.
	sealed string
}

// askStateOf is the still unopened askState a call answering a question carries.
func askStateOf(req mcp.CallToolRequest) (askState, bool) {
	return askState{sealed: req.Params.RequestState}, req.Params.RequestState != ""
}

// answer is the tool result for run: when it waits on a hook that asks and the client can
// elicit, an input_required result asking the person (mcp-go turns it into
// elicitation/create for clients before 2026-07-28); else the run's state.
func (s *Server) answer(ctx context.Context, run *runner.Run, ad admitted) *mcp.CallToolResult {
	if canElicit(ctx) {
		ask, err := s.askOf(run)
		if err != nil {
			s.log.WarnContext(ctx, "mcp: cannot ask through elicitation", "run", run.ID, "err", err)
		}
		if ask != nil {
			return s.askResult(askState{RunID: run.ID, Step: ask.step, Attempt: 1, Replayed: ad.replayed}, ask.message, ask)
		}
	}
	return tools.ResultOf(run).Replay(ad.replayed).Reuse(ad.reused).CallResult()
}

// askResult is the input_required result putting ask to the person.
func (s *Server) askResult(st askState, message string, ask *pendingAsk) *mcp.CallToolResult {
	state, err := s.states.seal(st)
	if err != nil {
		return tools.Problem{Status: http.StatusInternalServerError, Code: "INTERNAL", Message: "encoding the request state: " + err.Error()}.Result()
	}
	return server.NewInputRequestBuilder(state).
		Elicit(ask.key, mcp.ElicitationParams{Message: message, RequestedSchema: ask.schema}).
		ToolResult()
}

// continueAsk handles a tool call that brings the person's answer to a question asked
// before: it resumes the hook with the answer through the engine's normal resume (so
// whichever answer comes first — this one, a REST resume, gorunner_resume_hook — is the
// one the hook takes), asks again when the answer does not fit the schema (at most
// MaxAskAttempts times), then waits for the run as a first call does. A requestState the
// server did not sign is refused, changing nothing.
func (s *Server) continueAsk(ctx context.Context, req mcp.CallToolRequest, t *tools.Tool, st askState) (*mcp.CallToolResult, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, errUnauthenticated
	}
	st, err := s.states.open(st.sealed)
	if err != nil {
		return tools.Problem{Status: http.StatusBadRequest, Code: problem.CodeValidation, Message: err.Error()}.Result(), nil
	}
	run, err := s.ownRun(ctx, p, auth.RunsWrite, st.RunID)
	if err != nil {
		return s.errorResult(ctx, err)
	}
	if run.Workflow != t.Definition.Name {
		return s.errorResult(ctx, fmt.Errorf("run %s is not a run of %s: %w", st.RunID, t.Definition.Name, runner.ErrNotFound))
	}
	ask, err := s.askOf(run)
	if err != nil {
		return s.errorResult(ctx, err)
	}
	if ask != nil && ask.step == st.Step {
		if res := server.ElicitationResponse(req.Params.InputResponses, ask.key); res != nil {
			payload, problems := answerPayload(res, ask)
			if len(problems) > 0 {
				// An older state sent again does not reset the count: the run's wins.
				n, err := s.missAnswer(ctx, run, ask)
				if err != nil {
					return s.errorResult(ctx, err)
				}
				if st.Attempt = max(st.Attempt, n); st.Attempt >= MaxAskAttempts {
					return tools.ResultOf(run).Replay(st.Replayed).CallResult(), nil
				}
				st.Attempt++
				return s.askResult(st, retryMessage(ask.message, problems), ask), nil
			}
			if err := s.resumeAsked(ctx, run, ask, payload); err != nil {
				return s.errorResult(ctx, err)
			}
		}
	}
	if run, err = s.await(ctx, req, run, s.toolTimeout(t)); err != nil {
		return s.errorResult(ctx, err)
	}
	return s.answer(ctx, run, admitted{replayed: st.Replayed}), nil
}

// answerPayload is the hook payload of the person's answer: the content accepted (which
// must fit the schema), or {"declined": true, "action": …} for decline and cancel.
func answerPayload(res *mcp.ElicitationResult, ask *pendingAsk) (json.RawMessage, []schemas.Problem) {
	if res.Action != mcp.ElicitationResponseActionAccept {
		payload, err := json.Marshal(map[string]any{"declined": true, "action": res.Action})
		if err != nil {
			return nil, []schemas.Problem{{Message: err.Error()}}
		}
		return payload, nil
	}
	content, err := json.Marshal(res.Content)
	if err != nil {
		return nil, []schemas.Problem{{Message: "the answer is not valid JSON"}}
	}
	v, err := decodeNumbers(content)
	if err != nil {
		return nil, []schemas.Problem{{Message: "the answer is not valid JSON"}}
	}
	if problems := ask.input.Validate(v); len(problems) > 0 {
		return nil, problems
	}
	return content, nil
}

// resumeAsked resumes the hook with the answer unless it was answered meanwhile, then
// waits until the run has left that hook step, so that one hook is never asked twice.
func (s *Server) resumeAsked(ctx context.Context, run *runner.Run, ask *pendingAsk, payload json.RawMessage) error {
	now, err := s.deps.Engine.Get(ctx, run.ID)
	if err != nil {
		return err
	}
	if !stillAsking(now, ask) {
		return nil
	}
	if _, err := s.deps.Engine.Resume(context.WithoutCancel(ctx), run.Environment, ask.token, payload); err != nil {
		if errors.Is(err, runner.ErrNotFound) {
			return nil // the run released the hook: it moved on without this answer
		}
		return err
	}
	states, stop := s.deps.Engine.Watch(run.ID)
	defer stop()
	for {
		select {
		case r, ok := <-states:
			if !ok || !stillAsking(r, ask) {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stillAsking reports whether run still waits on the hook step ask was made for.
func stillAsking(run *runner.Run, ask *pendingAsk) bool {
	return run.Status == runner.StatusWaiting && run.WaitingOn != nil && run.WaitingOn.Hook == ask.token &&
		currentIndex(run) == ask.step
}

// retryMessage is the ask again, saying what was wrong with the last answer.
func retryMessage(message string, problems []schemas.Problem) string {
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = strings.TrimSpace(p.Path + " " + p.Message)
	}
	return "The last answer did not fit (" + strings.Join(lines, "; ") + "). " + message
}
