package wire

import (
	"encoding/json"
	"time"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// Run is a run as the API shows it: the record without the engine's state (its definition,
// lease claims, start token, parent, starter, depth, wake-up time).
type Run struct {
	ID          string          `json:"id"`
	WorkflowID  string          `json:"workflowId"`
	Workflow    string          `json:"workflow"`
	Version     int             `json:"version"` // 0: a test run of the draft
	Environment string          `json:"environment"`
	Status      runner.Status   `json:"status"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output"`
	Error       *Error          `json:"error"`
	Steps       []*StepRecord   `json:"steps"`
	WaitingOn   *WaitingOn      `json:"waitingOn"`
	RerunOf     string          `json:"rerunOf,omitempty"`
	Trigger     *Trigger        `json:"trigger,omitempty"`
	CreatedAt   time.Time       `json:"createdAt"`
	StartedAt   *time.Time      `json:"startedAt"`
	FinishedAt  *time.Time      `json:"finishedAt"`
	// UndeliveredPayloads are the payloads sent to the run's tokens that no hook step took
	// before it ended (the oldest runner.MaxUndeliveredPayloads); UndeliveredOmitted counts
	// those past that.
	UndeliveredPayloads []UndeliveredPayload `json:"undeliveredPayloads,omitempty"`
	UndeliveredOmitted  int                  `json:"undeliveredOmitted,omitempty"`
}

// UndeliveredPayload is a payload sent to token that no hook step took.
type UndeliveredPayload struct {
	Token   string          `json:"token"`
	Payload json.RawMessage `json:"payload"`
}

// Trigger is what started a run (SPEC §2): {"type": "schedule", "index": i, "at": tick} for a
// schedule's run, {"type": t} for the others.
type Trigger struct {
	Type  string     `json:"type" jsonschema:"enum=api,enum=mcp,enum=webhook,enum=cli,enum=schedule,enum=rerun,enum=child"`
	Index *int       `json:"index,omitempty"`
	At    *time.Time `json:"at,omitempty"`
}

// TriggerOf is the view of a trigger; a run stored before runs carried one has none (nil).
func TriggerOf(t runner.Trigger) *Trigger {
	if t.Type == "" {
		return nil
	}
	v := &Trigger{Type: t.Type}
	if t.Type == runner.TriggerSchedule {
		index, at := t.Schedule, t.At
		v.Index, v.At = &index, &at
	}
	return v
}

// StepRecord is one step of a run as the API shows it: the record without the step kind's
// durable state. (Named like the record so the OpenAPI component keeps its name.)
type StepRecord struct {
	ID string `json:"id"`
	// Path is where the record sits in the run's tree of steps: the step's id at the top
	// level, quotes/fedex/ask, charge-each/3/charge, charge/compensate below it.
	Path       string            `json:"path"`
	StepID     string            `json:"stepId"`
	Status     runner.StepStatus `json:"status"`
	Attempts   int               `json:"attempts"`
	Output     json.RawMessage   `json:"output,omitempty"`
	Error      *Error            `json:"error,omitempty"`
	StartedAt  *time.Time        `json:"startedAt,omitempty"`
	FinishedAt *time.Time        `json:"finishedAt,omitempty"`
	// Conflict is steps.<id>.conflict for a hook step under onConflict: continue.
	Conflict json.RawMessage `json:"conflict,omitempty"`
	// Input is the step's definition as its latest attempt evaluated it: bounded
	// (runner.MaxRecordedInput), header and credential values redacted.
	Input json.RawMessage `json:"input,omitempty"`
	// History is the step's latest attempts (at most runner.MaxAttemptHistory), oldest
	// first; absent for a step that completed on its one attempt without a request.
	History []Attempt `json:"history,omitempty"`
	// Counts are, on a run object past runner.MaxListedRecords records, the counts of the
	// records under this top-level one, which GET /api/runs/{id}/steps?parent= pages.
	Counts *StepCounts `json:"counts,omitempty"`
}

// Attempt is one attempt of a step: when it ran, its error and, for an http step, its
// request line (credentials in the URL redacted) and the status answered.
type Attempt struct {
	Attempt    int       `json:"attempt"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	Error      *Error    `json:"error,omitempty"`
	Request    string    `json:"request,omitempty"`
	Status     int       `json:"status,omitempty"`
}

// HistoryOf is the view of a step's attempts; none gives nil.
func HistoryOf(h []runner.Attempt) []Attempt {
	if len(h) == 0 {
		return nil
	}
	out := make([]Attempt, len(h))
	for i, a := range h {
		out[i] = Attempt{Attempt: a.N, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, Error: ErrorOf(a.Error),
			Request: a.Request, Status: a.Status}
	}
	return out
}

// StepCounts counts step records by status.
type StepCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Running   int `json:"running"`
	Waiting   int `json:"waiting"`
}

// Error is a run's or a step's error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Step    string `json:"step,omitempty"`
}

// WaitingOn says what a waiting run waits for, or where a queued one stands.
type WaitingOn struct {
	Hook       *WaitingHook  `json:"hook,omitempty"`
	SleepUntil *time.Time    `json:"sleepUntil,omitempty"`
	Queue      *WaitingQueue `json:"queue,omitempty"`
}

// WaitingQueue is where a queued run stands under its workflow's concurrency limit (SPEC
// §2): its key and limit, the runs holding the key's slots (at most
// runner.MaxQueueActiveShown, in ID order) and how many queued runs of the key are older.
type WaitingQueue struct {
	Key    string   `json:"key"`
	Limit  int      `json:"limit"`
	Active []string `json:"active"`
	Ahead  int      `json:"ahead"`
}

// WaitingHook is the hook a run waits on: its token and, for a hook with ask, the question
// (the evaluated ask.message) and the JSON Schema a resume payload must fit.
type WaitingHook struct {
	Token   string          `json:"token"`
	Message string          `json:"message,omitempty"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// Hook is a token's active owner: GET /api/hooks/{token}; with the question (message and
// schema) of the hook step that waits on it, when that step asks.
type Hook struct {
	Token     string          `json:"token"`
	RunID     string          `json:"runId"`
	CreatedAt time.Time       `json:"createdAt"`
	Message   string          `json:"message,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
}

// Submitted is the answer to a run admission (SPEC §6): the run, marked reused or
// forwarded when an atomic-start token sent the caller to its owner. Both flags false, it
// encodes as the plain {"data": run} envelope of a 202.
type Submitted struct {
	Data      *Run `json:"data"`
	Reused    bool `json:"reused,omitempty"`
	Forwarded bool `json:"forwarded,omitempty"`
}

// RunOf is the view of a run; nil gives nil.
func RunOf(r *runner.Run) *Run {
	if r == nil {
		return nil
	}
	v := &Run{
		ID: r.ID, WorkflowID: r.WorkflowID, Workflow: r.Workflow, Version: r.Version,
		Environment: r.Environment, Status: r.Status, Input: r.Input, Output: r.Output,
		Error: ErrorOf(r.Error), WaitingOn: WaitingOnOf(r.WaitingOn), RerunOf: r.RerunOf,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Trigger: TriggerOf(r.Trigger),
	}
	if u := r.Undelivered; u != nil {
		v.UndeliveredOmitted = u.Omitted
		for _, p := range u.Payloads {
			v.UndeliveredPayloads = append(v.UndeliveredPayloads, UndeliveredPayload{Token: p.Token, Payload: p.Payload})
		}
	}
	switch {
	case runner.Collapsed(r):
		v.Steps = collapsedSteps(r)
	case r.Steps != nil:
		v.Steps = StepsOf(r.Steps)
	}
	return v
}

// StepsOf is the view of each step record.
func StepsOf(recs []*runner.StepRecord) []*StepRecord {
	out := make([]*StepRecord, len(recs))
	for i, st := range recs {
		out[i] = StepOf(st)
	}
	return out
}

// collapsedSteps are the top-level records of r, each with the counts of those under it.
func collapsedSteps(r *runner.Run) []*StepRecord {
	counts := runner.CountsUnder(r)
	var out []*StepRecord
	for _, st := range r.Steps {
		if st.Path != "" {
			continue
		}
		v := StepOf(st)
		if c := counts[st.ID]; c != nil {
			v.Counts = &StepCounts{Total: c.Total, Completed: c.Completed, Failed: c.Failed, Running: c.Running, Waiting: c.Waiting}
		}
		out = append(out, v)
	}
	return out
}

// RunsOf is the view of each run; listed shows each as a list does, large outputs
// replaced by a truncation marker (runner.MaxListedOutputBytes). Never nil, so that an
// empty list encodes as [].
func RunsOf(runs []*runner.Run, listed bool) []*Run {
	out := make([]*Run, len(runs))
	for i, r := range runs {
		if listed {
			r = r.Listed()
		}
		out[i] = RunOf(r)
	}
	return out
}

// StepOf is the view of a step record; nil gives nil.
func StepOf(st *runner.StepRecord) *StepRecord {
	if st == nil {
		return nil
	}
	return &StepRecord{
		ID: st.ID, Path: runner.PathOf(st), StepID: st.StepID, Status: st.Status, Attempts: st.Attempts, Output: st.Output,
		Error: ErrorOf(st.Error), StartedAt: st.StartedAt, FinishedAt: st.FinishedAt, Conflict: st.Conflict,
		Input: st.Input, History: HistoryOf(st.History),
	}
}

// ErrorOf is the view of a run's or a step's error; nil gives nil.
func ErrorOf(e *runner.Error) *Error {
	if e == nil {
		return nil
	}
	return &Error{Code: e.Code, Message: e.Message, Step: e.Step}
}

// WaitingOnOf is the view of what a run waits for; nil gives nil.
func WaitingOnOf(w *runner.WaitingOn) *WaitingOn {
	if w == nil {
		return nil
	}
	v := &WaitingOn{SleepUntil: w.SleepUntil}
	if q := w.Queue; q != nil {
		v.Queue = &WaitingQueue{Key: q.Key, Limit: q.Limit, Active: q.Active, Ahead: q.Ahead}
		if v.Queue.Active == nil {
			v.Queue.Active = []string{}
		}
	}
	if w.Hook != "" {
		v.Hook = &WaitingHook{Token: w.Hook}
		if w.Ask != nil {
			v.Hook.Message, v.Hook.Schema = w.Ask.Message, w.Ask.Schema
		}
	}
	return v
}

// HookOf is the view of a token's owner, with ask, the question of the hook step waiting
// on it (nil: none waits, or it does not ask); the environment is the caller's and not
// shown.
func HookOf(h *runner.Hook, ask *schemas.HookAsk) *Hook {
	if h == nil {
		return nil
	}
	v := &Hook{Token: h.Token, RunID: h.RunID, CreatedAt: h.CreatedAt}
	if ask != nil {
		v.Message, v.Schema = ask.Message, ask.Schema
	}
	return v
}

// SubmittedOf is the answer to an admission; its HTTP status is 200 when reused or
// forwarded, else 202.
func SubmittedOf(res *runner.SubmitResult) Submitted {
	return Submitted{Data: RunOf(res.Run), Reused: res.Reused, Forwarded: res.Forwarded}
}

// Resume is the answer to a payload sent to a token: the run that owns it, whether a hook
// step took the payload (delivery; message says what a queued one awaits), and the run
// after it took it.
type Resume struct {
	Token    string          `json:"token"`
	RunID    string          `json:"runId"`
	Delivery runner.Delivery `json:"delivery"`
	Message  string          `json:"message,omitempty"`
	Run      *Run            `json:"run"`
}

// ResumeOf is the answer to a payload sent to token.
func ResumeOf(token string, res *runner.Resumed) Resume {
	return Resume{Token: token, RunID: res.Run.ID, Delivery: res.Delivery, Message: res.Message(token), Run: RunOf(res.Run)}
}
