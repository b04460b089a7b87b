package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
	step    int    // index of the hook step's record
	key     string // its key among a task's input requests: the record's path, unique in the run
	token   string
	message string
	schema  json.RawMessage
	input   *schemas.InputSchema
}

// askOf is the ask of the hook of run put to the person now (askedWait), nil when none is.
// The question is the hook step's own (evaluated once when it began to wait), the one
// every face shows.
func (s *Server) askOf(run *runner.Run) (*pendingAsk, error) {
	w, ok := askedWait(run)
	if !ok {
		return nil, nil
	}
	compiled, err := schemas.CompileInput(w.Ask.Schema)
	if err != nil {
		return nil, fmt.Errorf("compiling the ask schema of step %s: %w", w.Path, err)
	}
	return &pendingAsk{step: w.Index, key: w.Path, token: w.Hook, message: w.Ask.Message, schema: w.Ask.Schema, input: compiled}, nil
}

// waitsOnHook reports whether run is waiting on a hook.
func waitsOnHook(run *runner.Run) bool {
	return run.Status == runner.StatusWaiting && run.WaitingOn != nil && run.WaitingOn.Hook != ""
}

// askedWait is the hook of waiting run r whose ask is put to the person now. Hooks nested
// in branches and iterations are asked as top-level ones, one after another when several
// wait at once: the one whose answers are being counted, else the first in record order.
// After MaxAskAttempts answers that did not fit (in any of the ways of asking: a tool
// call's question, a tasks/result stream, tasks/update, on any process sharing the store)
// a hook is no longer asked — its question is withdrawn — and waits for
// gorunner_resume_hook or the REST resume as for a client without elicitation. The count
// is the run's own (Run.AskMisses, one hook's at a time), so every process reads the same
// answer.
func askedWait(r *runner.Run) (runner.StepWait, bool) {
	if r.Status != runner.StatusWaiting {
		return runner.StepWait{}, false
	}
	var first *runner.StepWait
	for _, w := range runner.Waits(r) {
		if w.Hook == "" || w.Ask == nil || r.AskMisses.At(w.Index) >= MaxAskAttempts {
			continue
		}
		if r.AskMisses.N > 0 && w.Index == r.AskMisses.Step {
			return w, true
		}
		if first == nil {
			first = &w
		}
	}
	if first == nil {
		return runner.StepWait{}, false
	}
	return *first, true
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

// stillAsking reports whether the hook step ask was made for still waits in run.
func stillAsking(run *runner.Run, ask *pendingAsk) bool {
	return slices.ContainsFunc(runner.Waits(run), func(w runner.StepWait) bool { return w.Index == ask.step && w.Hook == ask.token })
}

// retryMessage is the ask again, saying what was wrong with the last answer.
func retryMessage(message string, problems []schemas.Problem) string {
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = strings.TrimSpace(p.Path + " " + p.Message)
	}
	return "The last answer did not fit (" + strings.Join(lines, "; ") + "). " + message
}
