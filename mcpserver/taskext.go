package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/tracing"
	"github.com/gorunner/gorunner/mcpserver/front"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/tools"
)

// The tasks extension of protocol 2026-07-28 (SEP-2663, io.modelcontextprotocol/tasks).
// A client declares it in the capabilities each request carries in _meta; then a workflow
// tool call whose run has not ended when the call stops waiting answers a task
// (resultType "task") instead of the waiting run, and tasks/get, tasks/update and
// tasks/cancel serve it. The task is the run, as for 2025-11-25 tasks. mcp-go knows
// neither the extension nor a result shape other than CallToolResult for tools/call, so
// the task layer answers these calls itself.

// TasksExtension is the identifier of the tasks extension.
const TasksExtension = front.TasksExtension

// Methods and codes of the extension.
const (
	methodTasksUpdate = "tasks/update"
	// resultTypeTask marks a CreateTaskResult.
	resultTypeTask mcp.ResultType = "task"
)

// requestMeta is what the task layer reads of a request's _meta: the protocol version and
// client capabilities a 2026-07-28 request carries (SEP-2575).
type requestMeta struct {
	ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
	// TraceParent is the caller's W3C traceparent (SPEC §7), the parent of the run's trace.
	TraceParent  string `json:"traceparent"`
	Capabilities *struct {
		Elicitation json.RawMessage            `json:"elicitation"`
		Extensions  map[string]json.RawMessage `json:"extensions"`
	} `json:"io.modelcontextprotocol/clientCapabilities"`
}

// metaOf reads the _meta of a request's params; absent or malformed is the zero value.
func metaOf(params json.RawMessage) requestMeta {
	var p struct {
		Meta requestMeta `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return requestMeta{}
	}
	return p.Meta
}

// modern reports whether the request uses protocol 2026-07-28 or later.
func (m requestMeta) modern() bool { return mcp.IsModernProtocol(m.ProtocolVersion) }

// extension reports whether a modern request declares the tasks extension.
func (m requestMeta) extension() bool {
	if !m.modern() || m.Capabilities == nil {
		return false
	}
	_, ok := m.Capabilities.Extensions[TasksExtension]
	return ok
}

// elicits reports whether a modern request declares elicitation: only such a client is
// asked (input_required); another would poll a question it cannot answer.
func (m requestMeta) elicits() bool {
	return m.Capabilities != nil && len(m.Capabilities.Elicitation) > 0 && string(m.Capabilities.Elicitation) != "null"
}

// extTask is a task as the extension shows it: CreateTaskResult (resultType "task") and
// the DetailedTask of tasks/get (resultType "complete"), with the ask of an
// input_required task, the result of a completed one.
type extTask struct {
	ResultType     mcp.ResultType    `json:"resultType"`
	TaskID         string            `json:"taskId"`
	Status         mcp.TaskStatus    `json:"status"`
	StatusMessage  string            `json:"statusMessage,omitempty"`
	CreatedAt      string            `json:"createdAt"`
	LastUpdatedAt  string            `json:"lastUpdatedAt"`
	TTLMs          int64             `json:"ttlMs"`
	PollIntervalMs int64             `json:"pollIntervalMs"`
	InputRequests  mcp.InputRequests `json:"inputRequests,omitempty"`
	Result         any               `json:"result,omitempty"`
}

// extTaskOf is run as an extension task. A failed run is a tool result with isError, which
// the extension reports as completed (its failed is for JSON-RPC errors only); a run
// waiting on a hook that asks carries the question as its one input request, for a client
// that declared elicitation (elicits); another gets working, with statusMessage naming the
// hook and how to resume it. The run's definition is decoded once for both.
func (s *Server) extTaskOf(ctx context.Context, run *runner.Run, resultType mcp.ResultType, elicits bool) extTask {
	pos, err := positionOf(run)
	if err != nil {
		s.log.WarnContext(ctx, "mcp: cannot read the definition of a task's run", "run", run.ID, "err", err)
	}
	t := s.taskAt(run, pos)
	out := extTask{ResultType: resultType, TaskID: t.TaskId, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt, TTLMs: TaskTTL.Milliseconds(), PollIntervalMs: TaskPollInterval.Milliseconds()}
	switch run.Status {
	case runner.StatusCompleted, runner.StatusFailed:
		out.Status, out.Result = mcp.TaskStatusCompleted, tools.ResultOf(run).Replay(false).CallResult()
	case runner.StatusWaiting:
		var ask *pendingAsk
		if elicits {
			if ask, err = s.askOf(run); err != nil {
				s.log.WarnContext(ctx, "mcp: cannot show the question of a task", "run", run.ID, "err", err)
			}
		}
		if ask != nil {
			out.InputRequests = mcp.InputRequests{ask.key: mcp.NewElicitationInputRequest(
				mcp.ElicitationParams{Message: ask.message, RequestedSchema: ask.schema})}
		} else {
			out.Status = mcp.TaskStatusWorking
			if waitsOnHook(run) {
				out.StatusMessage = joinMessage(pos.describe(run), waitingMessage(run.WaitingOn.Hook))
			}
		}
	}
	return out
}

// answerExt answers a 2026-07-28 task request: the extension's methods for a client that
// declared it (-32021 for one that did not), method not found for the 2025-11-25 methods
// the extension removed.
func (s *Server) answerExt(ctx context.Context, p auth.Principal, c *taskCall) (any, error) {
	method := c.msg.Method
	if method == string(mcp.MethodTasksResult) || method == string(mcp.MethodTasksList) {
		return nil, front.NewError(mcp.METHOD_NOT_FOUND, method+" is not part of protocol "+c.meta.ProtocolVersion+": poll tasks/get", nil)
	}
	if !c.meta.extension() {
		return nil, front.NewError(mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing required client capability",
			map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	}
	switch method {
	case string(mcp.MethodToolsCall):
		return s.callAsTask(ctx, p, c)
	case string(mcp.MethodTasksGet):
		run, err := s.taskRun(ctx, p, auth.RunsRead, c.msg.Params)
		if err != nil {
			return nil, err
		}
		return s.extTaskOf(ctx, run, mcp.ResultTypeComplete, c.meta.elicits()), nil
	case methodTasksUpdate:
		return s.updateTask(ctx, p, c.msg.Params)
	case string(mcp.MethodTasksCancel):
		return s.cancelExtTask(ctx, p, c.msg.Params)
	}
	return nil, front.NewError(mcp.METHOD_NOT_FOUND, "method not found: "+method, nil)
}

// ack is the empty acknowledgement of tasks/update and tasks/cancel.
var ack = map[string]any{"resultType": mcp.ResultTypeComplete}

// callAsTask answers a workflow tool call (of c.tool) from a client with the extension:
// the run is started and waited for as by a plain call; if it has not ended when the wait
// stops (the tool's timeout, or the run waiting on a hook), the answer is its task.
func (s *Server) callAsTask(ctx context.Context, p auth.Principal, c *taskCall) (any, error) {
	t := c.tool // taskCallOf found it
	res, err := s.runOrTask(ctx, p, c, t)
	outcome := outcomeOK
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r.IsError {
			outcome = outcomeToolError
		}
		r.ResultType = mcp.ResultTypeComplete
	case nil:
		outcome = outcomeError
	}
	s.metrics.calls.WithLabelValues(t.Definition.Name, outcome).Inc()
	return res, err
}

// runOrTask is callAsTask's run: a tool result when the run ended (or the call was
// refused), else the run's task.
func (s *Server) runOrTask(ctx context.Context, p auth.Principal, c *taskCall, t *tools.Tool) (any, error) {
	call, problems := tools.ParseCall(c.call.Arguments)
	if problems != nil {
		return argumentProblems(t, "", problems), nil
	}
	release, err := s.deps.Engine.ReserveWait(p.ID)
	if err != nil {
		return s.errorResult(ctx, err)
	}
	defer release()
	run, ad, problems, err := s.admitCall(tracing.WithParent(ctx, c.meta.TraceParent), p, c.env.name, t, call, false)
	if problems != nil {
		return argumentProblems(t, "", problems), nil
	}
	if err != nil {
		return s.errorResult(ctx, err)
	}
	if run, err = s.deps.Engine.WaitFrom(ctx, run, s.toolTimeout(t)); err != nil {
		return s.errorResult(ctx, err)
	}
	if run.Status.Terminal() {
		return tools.ResultOf(run).Replay(ad.replayed).Reuse(ad.reused).CallResult(), nil
	}
	return s.extTaskOf(ctx, run, resultTypeTask, c.meta.elicits()), nil
}

// workflowTool is the workflow tool called name that the caller in ctx may call in env, or
// nil (a companion tool, an unknown name, a workflow outside the caller's scopes).
func (s *Server) workflowTool(ctx context.Context, env *environment, name string) *tools.Tool {
	if s.callable(ctx, env.name, name) || s.lookUp(ctx, env.name, name) {
		return env.lookup(name)
	}
	return nil
}

// updateTask takes the person's answer to a task's question (tasks/update): the answer
// under the question's key resumes the hook as a tool call's answer does (resumeAsked), so
// that whichever answer comes first is the one the hook takes, and a tasks/get after the
// acknowledgement no longer shows the question answered. Keys of no outstanding question
// are ignored, as the extension asks. An answer that does not fit the schema is invalid
// params, listing the problems, and the question stays open — up to MaxAskAttempts such
// answers, counted as the other ways of asking count them: the last one withdraws the
// question, as a tool call's question is given up, and the task is working, waiting on the
// hook for gorunner_resume_hook or the REST resume.
func (s *Server) updateTask(ctx context.Context, p auth.Principal, raw json.RawMessage) (any, error) {
	var params struct {
		InputResponses mcp.InputResponses `json:"inputResponses"`
	}
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, front.NewError(mcp.INVALID_PARAMS, "invalid tasks/update params: "+err.Error(), nil)
	}
	run, err := s.taskRun(ctx, p, auth.RunsWrite, raw)
	if err != nil {
		return nil, err
	}
	ask, err := s.askOf(run)
	if err != nil || ask == nil {
		return ack, err
	}
	res := server.ElicitationResponse(params.InputResponses, ask.key)
	if res == nil {
		return ack, nil
	}
	payload, problems := answerPayload(res, ask)
	if len(problems) > 0 {
		msg := retryMessage("", problems)
		n, err := s.missAnswer(ctx, run, ask)
		if err != nil {
			return nil, err
		}
		if n >= MaxAskAttempts {
			msg += fmt.Sprintf("That was the last of %d answers asked for: the question is withdrawn and the task waits on hook %s "+
				"(answer it with gorunner_resume_hook or the REST resume).", MaxAskAttempts, ask.token)
		} else {
			msg += "Answer again with tasks/update."
		}
		return nil, front.NewError(mcp.INVALID_PARAMS, msg, problems)
	}
	if err := s.resumeAsked(ctx, run, ask, payload); err != nil {
		return nil, err
	}
	return ack, nil
}

// cancelExtTask cancels the run of a task (tasks/cancel); a task that has ended is
// acknowledged all the same, as cancelling is a request, not a promise.
func (s *Server) cancelExtTask(ctx context.Context, p auth.Principal, raw json.RawMessage) (any, error) {
	run, err := s.taskRun(ctx, p, auth.RunsWrite, raw)
	if err != nil {
		return nil, err
	}
	if !run.Status.Terminal() {
		if _, err := s.deps.Engine.Cancel(context.WithoutCancel(ctx), run.ID); err != nil && !errors.Is(err, runner.ErrFinished) {
			return nil, err
		}
	}
	return ack, nil
}

// extensionHooks make server/discover (2026-07-28 only) offer the extension without the
// 2025-11-25 tasks capability, which the extension says a server supporting it must no
// longer advertise there; initialize (2025-11-25) keeps it.
func extensionHooks(h *server.Hooks) {
	h.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		res.Capabilities.Tasks = nil
	})
}
