package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/tracing"
	"github.com/gorunner/gorunner/mcpserver/front"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// Tasks (SPEC §5, protocol 2025-11-25) are runs: taskId is the run ID and the state is the
// run's, read from the store. mcp-go keeps tasks in its process's memory, so the task
// methods and task-augmented tool calls are answered here, in front of it (see
// taskTransport), and any process sharing the store answers for any task.

// Task limits and hints.
const (
	// TaskTTL is the ttl every task reports: its view (tasks/get, tasks/result, tasks/list)
	// ends TaskTTL after the run was created. The run itself is kept.
	TaskTTL = 24 * time.Hour
	// TaskPollInterval is the pollInterval suggested to clients.
	TaskPollInterval = 2 * time.Second
	// TaskListPage is how many tasks one tasks/list page holds.
	TaskListPage = 50
)

// toolCallParams are the params of a tools/call the task layer reads, _meta included.
type toolCallParams struct {
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments"`
	Task         json.RawMessage `json:"task"`
	RequestState string          `json:"requestState"`
	Meta         requestMeta     `json:"_meta"`
}

// taskParams are the params of tasks/get, tasks/result and tasks/cancel.
type taskParams struct {
	TaskID string `json:"taskId"`
}

// taskCall is one request the task layer answers (front.Task).
type taskCall struct {
	s   *Server
	env *environment
	// sessionID is the 2025-11-25 session the request came in ("" when none): the one that
	// gets notifications/tasks/status of the tasks it creates.
	sessionID string
	msg       *front.Message
	meta      requestMeta
	// client carries requests to the client while the request is answered (the questions
	// of a task awaited with tasks/result); nil when the transport cannot, or the session
	// did not declare elicitation.
	client *front.Link
	// tool is the workflow tool of a 2026-07-28 tools/call the task layer answers.
	tool *tools.Tool
	// call are the params of a tools/call, read once by taskCallOf.
	call toolCallParams
}

// taskCallOf returns the task call of msg when the task layer answers it: for 2025-11-25
// requests a task method or a tools/call asking for a task; for 2026-07-28 requests the
// task methods (the extension's, and the removed ones, to refuse them) and, when the
// client declares the extension, the first call of a workflow tool (a call answering a
// question, with requestState, stays with the tool handler).
//
// A tools/call's params are read here once, for routing and answering alike. One the task
// layer does not answer goes to mcp-go as the raw body: its streamable HTTP and stdio
// transports take only bytes (they parse them with their session and protocol checks), and
// MCPServer.HandleMessage takes a json.RawMessage, so a parsed request cannot be handed on.
func (s *Server) taskCallOf(ctx context.Context, env *environment, msg *front.Message) (*taskCall, bool) {
	if len(msg.ID) == 0 {
		return nil, false
	}
	c := &taskCall{s: s, env: env, msg: msg}
	switch mcp.MCPMethod(msg.Method) {
	case mcp.MethodTasksGet, mcp.MethodTasksResult, mcp.MethodTasksList, mcp.MethodTasksCancel:
		c.meta = metaOf(msg.Params)
		return c, true
	case methodTasksUpdate:
		c.meta = metaOf(msg.Params)
		return c, c.meta.modern()
	case mcp.MethodToolsCall:
	default:
		return nil, false
	}
	if json.Unmarshal(msg.Params, &c.call) != nil {
		return nil, false
	}
	c.meta = c.call.Meta
	if !c.meta.modern() {
		return c, len(c.call.Task) > 0 && string(c.call.Task) != "null"
	}
	if !c.meta.extension() || c.call.RequestState != "" {
		return nil, false
	}
	c.tool = s.workflowTool(ctx, env, c.call.Name)
	return c, c.tool != nil
}

// envTasks is the task layer of one environment, as its router sees it (front.Tasks).
type envTasks struct {
	s   *Server
	env *environment
}

// Task is taskCallOf.
func (t envTasks) Task(ctx context.Context, msg *front.Message) (front.Task, bool) {
	if c, ok := t.s.taskCallOf(ctx, t.env, msg); ok {
		return c, true
	}
	return nil, false
}

// Version is the protocol version a 2026-07-28 request declares, else "".
func (c *taskCall) Version() string {
	if c.meta.modern() {
		return c.meta.ProtocolVersion
	}
	return ""
}

// Answer answers c for the principal in ctx; a 2025-11-25 request is answered for its
// session, whose client is asked through link when it declared elicitation.
func (c *taskCall) Answer(ctx context.Context, session string, link *front.Link) mcp.JSONRPCMessage {
	c.sessionID = session
	if link != nil && c.s.elicitors.can(session) {
		c.client = link
	}
	return c.s.answerTask(ctx, c)
}

// answerTask answers a task call for the principal in ctx.
func (s *Server) answerTask(ctx context.Context, c *taskCall) mcp.JSONRPCMessage {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return front.Answer(c.msg.ID, nil, front.NewError(mcp.INTERNAL_ERROR, errUnauthenticated.Error(), nil))
	}
	var res any
	var err error
	if c.meta.modern() {
		res, err = s.answerExt(ctx, p, c)
	} else {
		res, err = s.answerLegacy(ctx, p, c)
	}
	if err != nil {
		return front.Answer(c.msg.ID, nil, s.rpcErrorOf(ctx, err))
	}
	return front.Answer(c.msg.ID, res, nil)
}

// answerLegacy answers a 2025-11-25 task request.
func (s *Server) answerLegacy(ctx context.Context, p auth.Principal, c *taskCall) (any, error) {
	switch mcp.MCPMethod(c.msg.Method) {
	case mcp.MethodToolsCall:
		return s.createTask(ctx, c.env, p, c.sessionID, &c.call)
	case mcp.MethodTasksGet:
		return s.getTask(ctx, p, c.msg.Params)
	case mcp.MethodTasksResult:
		return s.taskResult(ctx, p, c)
	case mcp.MethodTasksList:
		return s.listTasks(ctx, c.env, p, c.msg.Params)
	case mcp.MethodTasksCancel:
		return s.cancelTask(ctx, p, c.msg.Params)
	}
	return nil, front.NewError(mcp.METHOD_NOT_FOUND, "method not found: "+c.msg.Method, nil)
}

// rpcErrorOf turns a failure into a JSON-RPC error: a task or run that is not there (or not
// the caller's) is invalid params; a store that cannot serve (by the REST API's rule) is
// an internal error that says so and to retry (storeUnavailable, its cause logged); a
// request the client cancelled is not logged, as errorResult does not; any other
// unexpected failure is logged and not described.
func (s *Server) rpcErrorOf(ctx context.Context, err error) *front.Error {
	var re *front.Error
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, runner.ErrNotFound):
		return front.NewError(mcp.INVALID_PARAMS, "task not found", nil)
	}
	if pr, ok := problemOf(err); ok {
		return front.NewError(mcp.INVALID_PARAMS, pr.Message, pr)
	}
	if ctx.Err() != nil {
		return front.NewError(mcp.INTERNAL_ERROR, ctx.Err().Error(), nil)
	}
	if s.storeDown(ctx, "task request", err) {
		return front.NewError(mcp.INTERNAL_ERROR, storeUnavailable.Message, storeUnavailable)
	}
	s.log.ErrorContext(ctx, "mcp: task request failed", "err", err)
	return front.NewError(mcp.INTERNAL_ERROR, errInternal.Error(), nil)
}

// createTask starts the run of a task-augmented tools/call and answers at once with its
// task. A replayed idempotencyKey answers with the first call's task.
func (s *Server) createTask(ctx context.Context, env *environment, p auth.Principal, sessionID string, params *toolCallParams) (any, error) {
	t := s.workflowTool(ctx, env, params.Name)
	if t == nil {
		return nil, front.NewError(mcp.INVALID_PARAMS, fmt.Sprintf("tool %q not found or it does not support tasks", params.Name), nil)
	}
	call, problems := tools.ParseCall(params.Arguments)
	if problems != nil {
		return nil, invalidTaskArguments(problems)
	}
	run, _, problems, err := s.admitCall(tracing.WithParent(ctx, params.Meta.TraceParent), p, env.name, t, call, true)
	if problems != nil {
		return nil, invalidTaskArguments(problems)
	}
	if err != nil {
		return nil, err
	}
	if sessionID != "" {
		s.notifyTaskStatus(env, sessionID, run)
	}
	return mcp.CreateTaskResult{Task: s.taskOf(run)}, nil
}

// invalidTaskArguments is the JSON-RPC error refusing a task whose arguments do not fit
// its tool's input schema: no task is made.
func invalidTaskArguments(problems []schemas.Problem) *front.Error {
	return front.NewError(mcp.INVALID_PARAMS, "the arguments do not match the tool's input schema", problems)
}

// taskRun reads the run of a task request for p; an expired task view is not found.
func (s *Server) taskRun(ctx context.Context, p auth.Principal, perm auth.Permission, raw json.RawMessage) (*runner.Run, error) {
	var params taskParams
	if err := json.Unmarshal(raw, &params); err != nil || params.TaskID == "" {
		return nil, front.NewError(mcp.INVALID_PARAMS, "taskId is required: the taskId of the task the tools/call answered", nil)
	}
	run, err := s.ownRun(ctx, p, perm, params.TaskID)
	if err != nil {
		return nil, err
	}
	if s.expired(run) {
		return nil, front.NewError(mcp.INVALID_PARAMS, "task not found: its ttl has expired (the run is still readable with gorunner_get_run)", nil)
	}
	return run, nil
}

// expired reports whether the task view of run has passed its ttl: TaskTTL after the run
// was created, to the millisecond the ttl is reported in.
func (s *Server) expired(run *runner.Run) bool {
	return s.cfg.Now().Sub(run.CreatedAt) > TaskTTL
}

func (s *Server) getTask(ctx context.Context, p auth.Principal, raw json.RawMessage) (any, error) {
	run, err := s.taskRun(ctx, p, auth.RunsRead, raw)
	if err != nil {
		return nil, err
	}
	return mcp.GetTaskResult{Task: s.taskOf(run)}, nil
}

// taskResult waits until the run has ended (holding one of the principal's wait slots),
// then answers what a plain tool call whose run ended gives, tied to the task. Meanwhile,
// when the client can be asked, each hook that asks is put to the person on this
// request's stream (see askOverLink).
func (s *Server) taskResult(ctx context.Context, p auth.Principal, c *taskCall) (any, error) {
	run, err := s.taskRun(ctx, p, auth.RunsRead, c.msg.Params)
	if err != nil {
		return nil, err
	}
	release, err := s.deps.Engine.ReserveWait(p.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	link := c.client
	settled := map[string]bool{} // hook tokens asked in this call and answered or given up
	asks := func(r *runner.Run) bool {
		w, ok := askedWait(r)
		return link != nil && ok && !settled[w.Hook]
	}
	for {
		if run, err = s.awaitEnd(ctx, run, asks); err != nil {
			return nil, err
		}
		if run.Status.Terminal() || !asks(run) {
			break // ended, or the engine stopped watching: answer the state at hand
		}
		ask, err := s.askOf(run)
		if err != nil {
			w, _ := askedWait(run)
			settled[w.Hook] = true // a question that cannot be put: wait on
			continue
		}
		settled[ask.token] = true
		if _, err := s.askOverLink(ctx, link, run, ask); errors.Is(err, front.ErrNoAnswer) {
			link = nil
		} else if err != nil {
			return nil, err
		}
	}
	res := tools.ResultOf(run).Replay(false).CallResult()
	res.Meta = mcp.WithRelatedTask(run.ID)
	return res, nil
}

// awaitEnd returns run once it has completed, failed or been cancelled, or once stop
// says so of a waiting state.
func (s *Server) awaitEnd(ctx context.Context, run *runner.Run, stop func(*runner.Run) bool) (*runner.Run, error) {
	if run.Status.Terminal() || (run.Status == runner.StatusWaiting && stop(run)) {
		return run, nil
	}
	states, unwatch := s.deps.Engine.Watch(run.ID)
	defer unwatch()
	for {
		select {
		case r, ok := <-states:
			if !ok {
				return s.deps.Engine.Get(ctx, run.ID)
			}
			if r.Status.Terminal() || (r.Status == runner.StatusWaiting && stop(r)) {
				return r, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *Server) cancelTask(ctx context.Context, p auth.Principal, raw json.RawMessage) (any, error) {
	run, err := s.taskRun(ctx, p, auth.RunsWrite, raw)
	if err != nil {
		return nil, err
	}
	if run.Status.Terminal() {
		return nil, front.NewError(mcp.INVALID_PARAMS, fmt.Sprintf("task %s is already %s", run.ID, run.Status), nil)
	}
	if run, err = s.deps.Engine.Cancel(context.WithoutCancel(ctx), run.ID); err != nil {
		return nil, err
	}
	return mcp.CancelTaskResult{Task: s.taskOf(run)}, nil
}

// listTasks lists the task runs (runner.Run.Task: the runs createTask started) the caller
// started in env, newest first; it may read them all. A run whose task view expired ends
// the list, as every run after it is older.
func (s *Server) listTasks(ctx context.Context, env *environment, p auth.Principal, raw json.RawMessage) (any, error) {
	var params struct {
		Cursor string `json:"cursor"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &params); err != nil {
			return nil, front.NewError(mcp.INVALID_PARAMS, "invalid tasks/list params: "+err.Error(), nil)
		}
	}
	runs, next, err := s.deps.Engine.List(ctx, runner.ListRunsParams{Environment: env.name, Task: true,
		Readable: &runner.Readable{StartedBy: p.ID}, Limit: TaskListPage, Cursor: params.Cursor})
	if errors.Is(err, runner.ErrInvalidCursor) {
		return nil, front.NewError(mcp.INVALID_PARAMS, "invalid cursor: pass the nextCursor of the previous tasks/list page", nil)
	}
	if err != nil {
		return nil, err
	}
	out := mcp.ListTasksResult{Tasks: make([]mcp.Task, 0, len(runs))}
	for _, run := range runs {
		if s.expired(run) {
			next = ""
			break
		}
		out.Tasks = append(out.Tasks, s.taskOf(run))
	}
	out.NextCursor = mcp.Cursor(next)
	return out, nil
}

// taskOf is run as a task (SPEC §5).
func (s *Server) taskOf(run *runner.Run) mcp.Task {
	pos, _ := positionOf(run) // a definition that does not decode leaves the step's kind blank
	return s.taskAt(run, pos)
}

// taskAt is run, standing at pos, as a task: queued, pending and running are working (a
// queued one with a statusMessage saying so); waiting on a
// hook that asks is input_required, other waiting (a hook no longer asked, see
// Server.asks) is working with a message naming the hook; the end states keep their names.
// statusMessage names the step at hand, or the one that failed with the run's error.
func (s *Server) taskAt(run *runner.Run, pos position) mcp.Task {
	t := mcp.NewTask(run.ID,
		mcp.WithTaskCreatedAt(run.CreatedAt.UTC().Format(time.RFC3339)),
		mcp.WithTaskTTL(TaskTTL.Milliseconds()),
		mcp.WithTaskPollInterval(TaskPollInterval.Milliseconds()))
	t.LastUpdatedAt = lastUpdate(run).UTC().Format(time.RFC3339)
	step := pos.describe(run)
	switch run.Status {
	case runner.StatusCompleted:
		t.Status = mcp.TaskStatusCompleted
	case runner.StatusFailed:
		t.Status = mcp.TaskStatusFailed
		if run.Error != nil {
			t.StatusMessage = joinMessage(step, run.Error.Message)
		}
	case runner.StatusCancelled:
		t.Status = mcp.TaskStatusCancelled
	case runner.StatusWaiting:
		t.Status = mcp.TaskStatusWorking
		if _, asking := askedWait(run); asking {
			t.Status = mcp.TaskStatusInputRequired
		}
		t.StatusMessage = step
		if waitsOnHook(run) {
			t.StatusMessage = joinMessage(step, waitingMessage(run.WaitingOn.Hook))
		}
	case runner.StatusQueued:
		t.Status = mcp.TaskStatusWorking
		t.StatusMessage = queuedMessage(run)
	default:
		t.StatusMessage = step
	}
	return t
}

// queuedMessage is the statusMessage of a queued run's task: what it waits for.
func queuedMessage(run *runner.Run) string {
	if c := run.Concurrency; c != nil {
		return fmt.Sprintf("queued: waiting for one of the %d slots of concurrency key %q", c.Limit, c.Key)
	}
	return "queued: waiting for a slot of its concurrency limit"
}

// ResumeHint follows the token in the statusMessage of a task waiting on a hook that it
// is not asked about (no elicitation, a hook without ask, or the question withdrawn): how
// to resume it.
const ResumeHint = "; resume it with gorunner_resume_hook {token, payload} or POST /api/hooks/{token}/resume"

// waitingMessage says that a run waits on hook token and how to resume it.
func waitingMessage(token string) string {
	return "waiting on hook " + token + ResumeHint
}

// joinMessage is the step, then what is said of it; either may be empty.
func joinMessage(step, detail string) string {
	if step == "" || detail == "" {
		return step + detail
	}
	return step + ": " + detail
}

// lastUpdate is the latest time the run records.
func lastUpdate(run *runner.Run) time.Time {
	last := run.CreatedAt
	for _, t := range []*time.Time{run.StartedAt, run.FinishedAt} {
		if t != nil && t.After(last) {
			last = *t
		}
	}
	for _, st := range run.Steps {
		for _, t := range []*time.Time{st.StartedAt, st.FinishedAt} {
			if t != nil && t.After(last) {
				last = *t
			}
		}
	}
	return last
}

// position is where a run stands in its definition, decoded once: the index of the step
// at hand — the first that has not finished, or for a failed run the one that failed —
// and that step's definition (nil past the last step, or when the definition does not
// decode).
type position struct {
	index int
	step  *schemas.Step
}

// positionOf reads where run stands; the error says its definition does not decode.
func positionOf(run *runner.Run) (position, error) {
	pos := position{index: currentIndex(run)}
	if run.Status == runner.StatusFailed {
		if i := slices.IndexFunc(run.Steps, func(st *runner.StepRecord) bool { return st.Path == "" && st.Status == runner.StepFailed }); i >= 0 {
			pos.index = i
		}
	}
	if pos.index >= topSteps(run) {
		return pos, nil
	}
	def, err := schemas.Decode(run.Definition)
	if err != nil {
		return pos, err
	}
	if pos.index < len(def.Steps) {
		pos.step = &def.Steps[pos.index]
	}
	return pos, nil
}

// describe is the top-level step at pos as statusMessage says it, "step 3/7 charge (http)",
// a foreach with its iterations finished, "step 1/2 charge-each (foreach), charge-each:
// 37/120"; "" past the last step.
func (pos position) describe(run *runner.Run) string {
	top := topSteps(run)
	if pos.index >= top {
		return ""
	}
	kind := ""
	if pos.step != nil {
		kind = pos.step.Kind()
	}
	id := run.Steps[pos.index].ID
	msg := fmt.Sprintf("step %d/%d %s (%s)", pos.index+1, top, id, kind)
	if done, total, ok := runner.Progress(run, pos.index); ok {
		msg += fmt.Sprintf(", %s: %d/%d", id, done, total)
	}
	return msg
}

// topSteps is how many top-level step records run has: they come first, nested ones
// after (runner.StepRecord.Path).
func topSteps(run *runner.Run) int {
	n := 0
	for n < len(run.Steps) && run.Steps[n].Path == "" {
		n++
	}
	return n
}

// currentIndex is the index of the first step of run that has not finished.
func currentIndex(run *runner.Run) int {
	i, top := 0, topSteps(run)
	for i < top && stepFinished(run.Steps[i].Status) {
		i++
	}
	return i
}
