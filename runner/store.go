package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gorunner/gorunner/schemas"
)

// Sentinel errors a Store returns so the engine and the API can branch with errors.Is.
var (
	// ErrNotFound means no such run, or no active hook for a token.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost means the caller no longer holds the run's lease; another worker may.
	ErrLeaseLost = errors.New("lease lost")
	// ErrFinished means the run already ended (completed, failed or cancelled).
	ErrFinished = errors.New("run already finished")
	// ErrHookConflict means another active run owns the token; see *TokenConflictError.
	ErrHookConflict = errors.New("token owned by another run")
	// ErrInvalidCursor means a list cursor was not one the store gave out.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrStaleCatalog is CreateRun's refusal of an admission whose
	// CreateRunParams.CatalogVersion no longer stands: the catalog changed since the run's
	// workflow was resolved, and nothing was written.
	ErrStaleCatalog = errors.New("the catalog changed since the workflow was resolved")
)

// TokenConflictError says which run owns a token. It matches ErrHookConflict.
type TokenConflictError struct {
	Environment string
	Token       string
	// OwnerRunID is empty when the run that asked may not reach the owner (SPEC §6):
	// the conflict then names no run.
	OwnerRunID string
}

func (e *TokenConflictError) Error() string {
	if e.OwnerRunID == "" {
		return fmt.Sprintf("token %q is owned by another run", e.Token)
	}
	return fmt.Sprintf("token %q is owned by run %s", e.Token, e.OwnerRunID)
}

// Is makes errors.Is(err, ErrHookConflict) true.
func (e *TokenConflictError) Is(target error) bool { return target == ErrHookConflict }

// Status is a run's status.
type Status string

// Run statuses.
const (
	// StatusQueued is a run admitted past its concurrency limit (queue.go): not started,
	// not claimed, until an active run of its key ends.
	StatusQueued    Status = "queued"
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// statuses are the run statuses, in the order a run moves through them.
var statuses = []Status{StatusQueued, StatusPending, StatusRunning, StatusWaiting, StatusCompleted, StatusFailed, StatusCancelled}

// Statuses returns every run status, in the order a run moves through them.
func Statuses() []Status { return slices.Clone(statuses) }

// StatusList is the run statuses for a message: "queued, pending, …, cancelled".
func StatusList() string {
	names := make([]string, len(statuses))
	for i, s := range statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Valid reports whether s is one of the run statuses.
func (s Status) Valid() bool { return slices.Contains(statuses, s) }

// Terminal reports whether s is an end state.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Settled reports whether a run in s has stopped running: it ended or waits (a queued run
// has not: it waits to start, as a pending one does). Engine.Wait
// returns such a run at once, unless it waits on a hook for which a payload is queued or
// for a time that comes before the wait ends (Engine.Settled): it moves on by itself.
func (s Status) Settled() bool { return s != StatusQueued && s != StatusPending && s != StatusRunning }

// StepStatus is one step's status.
type StepStatus string

// Step statuses.
const (
	StepPending   StepStatus = "pending"
	StepRunning   StepStatus = "running"
	StepWaiting   StepStatus = "waiting"
	StepCompleted StepStatus = "completed"
	StepFailed    StepStatus = "failed"
	StepSkipped   StepStatus = "skipped"
	StepCancelled StepStatus = "cancelled"
)

// Environments.
const (
	EnvProduction = "production"
	EnvTest       = "test"
)

// Error is a run's or a step's error. Clients see wire.Error; stores keep storecodec's.
type Error struct {
	Code    string
	Message string
	Step    string
}

// WaitingOn says what a waiting run waits for. Clients see wire.WaitingOn.
type WaitingOn struct {
	Hook string
	// Ask is the hook step's question (its ask, message and schema evaluated when the run
	// began to wait), nil for a hook that does not ask. Every face shows this one evaluation
	// and resumes are checked against its schema.
	Ask        *schemas.HookAsk
	SleepUntil *time.Time
	// Queue is where a queued run stands (Engine.Place); never stored.
	Queue *QueuePlace
}

// StepRecord is the durable record of one step of a run. Clients see wire.StepRecord;
// stores keep storecodec's encoding.
type StepRecord struct {
	ID string
	// Path is a nested record's path (quotes/fedex/ask, charge-each/3/charge,
	// charge/compensate; see docs/design/control-flow.md), empty for a top-level step's, whose
	// path is its ID. Top-level records come first, in definition order; nested ones after.
	Path       string
	StepID     string
	Status     StepStatus
	Attempts   int
	Output     json.RawMessage
	Error      *Error
	StartedAt  *time.Time
	FinishedAt *time.Time
	// Conflict is steps.<id>.conflict for a hook step under onConflict: continue.
	Conflict json.RawMessage
	// State is the step kind's durable state between wake-ups (sleep deadline, hook token,
	// child run ID, next retry time). Never shown to clients.
	State json.RawMessage
	// Input is the step's definition as its latest attempt evaluated it (see recordedInput:
	// bounded, header and credential values redacted); nil for a set step, whose evaluated
	// body is its output, and for a step not yet begun.
	Input json.RawMessage
	// History is the step's latest attempts (at most MaxAttemptHistory), oldest first;
	// nil for a step that completed on its one attempt without a request to tell of.
	History []Attempt
}

// Run is one execution of one workflow version with one input: an engine record, without
// JSON tags. Clients see wire.Run; the stores encode it through storecodec.
type Run struct {
	ID          string
	WorkflowID  string
	Workflow    string
	Version     int // 0: a test run of the draft
	Environment string
	Status      Status
	Input       json.RawMessage
	Output      json.RawMessage
	Error       *Error
	Steps       []*StepRecord
	WaitingOn   *WaitingOn
	RerunOf     string
	// Trigger says what started the run (SPEC §2): fixed at admission.
	Trigger    Trigger
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time

	// Engine state, never shown to clients (wire.Run leaves it out).

	// Definition is the definition this run executes, fixed at admission. Empty when the
	// store no longer has it (a Redis that evicted its version's record): the run is still
	// read, cancelled and rerun, and the worker that claims it ends it (Engine.work).
	Definition json.RawMessage
	// WakeAt is when a worker should next look at the run; zero means not due by time.
	WakeAt time.Time
	// CancelRequested is set by a cancel; the worker holding the run ends it.
	CancelRequested bool
	// StartToken is the atomic-start token the run holds, if any.
	StartToken string
	// Concurrency is the run's key and limit under its workflow's concurrency (queue.go),
	// fixed at admission; nil for a workflow without one.
	Concurrency *Concurrency
	// ParentRunID is the run whose workflow step started this one; its end wakes the parent.
	ParentRunID string
	// StartedBy is the ID of the principal that started the run (a child run inherits its
	// parent's); empty for webhook runs. That principal may read the run (SPEC §9).
	StartedBy string
	// ActsFor is who the run acts for when it reaches another workflow's run (SPEC §6);
	// empty for a run admitted before it was recorded, which acts for no one. Fixed at
	// admission.
	ActsFor Authority
	// Task says the run was started as an MCP task (a task-augmented tools/call, SPEC §5):
	// tasks/list lists such runs. Fixed at admission; a child or a rerun is not a task.
	Task bool
	// Depth is how many workflow steps nest this run: 0 for a run started from outside, its
	// parent's Depth + 1 for a child. Fixed at admission.
	Depth int
	// Claims is how many workers in a row held the run without making progress since: the
	// claims since the one during which the run last made progress, that one included.
	// ClaimRuns counts it up; SaveRun (except SaveOptions.AttemptStart) sets it to 1, the
	// saver's own claim; ReleaseRun sets it to 0. Above 1, earlier workers vanished holding
	// the run.
	Claims int
	// Undelivered is what the run kept, when it ended, of the payloads sent to its tokens
	// that no hook step took; nil when none was left. Only the store writes it, in the save
	// that ends the run (which sets it on the run it saved too).
	Undelivered *Undelivered
	// AskMisses counts the answers to the question of a hook step (SPEC §5, ask) that did
	// not fit its schema. Only MissAsk writes it (SaveRun leaves it as it is), so that
	// every process sharing the store counts the same answers.
	AskMisses AskMisses
	// TraceParent is the W3C traceparent of the run's admission span (SPEC §7, traces),
	// which the spans of its step attempts are children of, on whichever process works
	// them; empty when the admission was not traced. Fixed at admission.
	TraceParent string
}

// MaxUndeliveredPayloads is how many of the payloads still queued for a run's tokens when
// it ends the run keeps (Run.Undelivered), the oldest first; the rest are counted.
const MaxUndeliveredPayloads = 20

// Undelivered is what a run that ended kept of the payloads queued for its tokens that no
// hook step took: the oldest MaxUndeliveredPayloads, and how many more there were.
type Undelivered struct {
	Payloads []UndeliveredPayload
	Omitted  int
}

// Count is how many payloads were left undelivered in all.
func (u *Undelivered) Count() int {
	if u == nil {
		return 0
	}
	return len(u.Payloads) + u.Omitted
}

// UndeliveredPayload is one payload sent to token that no hook step took.
type UndeliveredPayload struct {
	Token   string
	Payload json.RawMessage
}

// AskMisses is how many answers (N) to the question of the hook step at index Step did
// not fit. A count kept for another step than the one the run waits on is void: the run
// moved on, and the count with it.
type AskMisses struct {
	Step int
	N    int
}

// At is the count for the hook step at index step.
func (m AskMisses) At(step int) int {
	if m.Step != step {
		return 0
	}
	return m.N
}

// Hook is an active token owned by a run. Clients see wire.Hook.
type Hook struct {
	Environment string
	Token       string
	RunID       string
	CreatedAt   time.Time
}

// Payload is one payload queued for a token.
type Payload struct {
	Seq     int64
	Payload json.RawMessage
}

// ListRunsParams filters ListRuns. Runs come newest first.
type ListRunsParams struct {
	WorkflowID string
	Status     Status
	// Environment, when set, keeps only the runs of that environment.
	Environment string
	// Task keeps only the runs started as MCP tasks (Run.Task).
	Task bool
	// Trigger, when set, keeps only the runs of that trigger type (Trigger.Type).
	Trigger string
	Limit   int
	Cursor  string
	// Readable, when set, keeps only the runs it admits.
	Readable *Readable
	// Examine bounds the runs the page examines, lower than limits.MaxRunsExamined (0:
	// that bound). A page that reaches it before it is full ends short, possibly empty,
	// with a cursor after the last run examined.
	Examine int
}

// Readable selects the runs a principal may read: those it started and those of some
// workflows.
type Readable struct {
	// StartedBy is the principal's ID.
	StartedBy string
	// WorkflowIDs are the workflows whose runs it may read.
	WorkflowIDs []string
}

// Admitter reports whether a run passes the filter, for a caller that checks many runs
// against one filter (a store's walk of a list): it looks each run's workflow up in a set
// built once, however many workflows a principal's tags grant.
func (f *Readable) Admitter() func(*Run) bool {
	if f == nil {
		return func(*Run) bool { return true }
	}
	workflows := make(map[string]bool, len(f.WorkflowIDs))
	for _, id := range f.WorkflowIDs {
		workflows[id] = true
	}
	return func(r *Run) bool {
		return (f.StartedBy != "" && r.StartedBy == f.StartedBy) || workflows[r.WorkflowID]
	}
}

// SaveOptions rides along with SaveRun.
type SaveOptions struct {
	// ConsumePayload, when > 0, deletes that queued payload in the same transaction, so a
	// payload is delivered exactly once.
	ConsumePayload int64
	// Steps are the indexes of the step records changed since the run was claimed or last
	// saved: only those are written, so a save costs the same at step 1,000 as at step 10.
	// Nil writes every step record.
	Steps []int
	// AttemptStart says the save only records the start of an attempt: not progress, so the
	// run's Claims count is kept (a worker that vanishes during every attempt is noticed).
	AttemptStart bool
}

// Store is what the runner needs from a backend. runner/runnertest is the conformance
// suite every backend passes.
type Store interface {
	// CreateRun admits p.Run durably, due at its WakeAt, in one transaction or script with
	// what p asks: the start token claim (owned by another active run →
	// *TokenConflictError), the lease (Claims 1), the idempotency key and its kept answer.
	// It reports the key as idempotency.Store.Claim does; without a key a write is Claimed.
	// Any outcome but Claimed, or an error, means nothing was written. A Claimed write with
	// p.Owner set hands out the run's lease. p.Run may be in any state its first steps leave
	// it in (running, finished steps): a run already ended (terminal status, FinishedAt set,
	// no Owner; else ErrEndedRun, see CreateRunParams.Check) is written as SaveRun writes an
	// end, holding no token (its start token is only checked for a conflict), with its
	// parent made due.
	CreateRun(ctx context.Context, p CreateRunParams) (CreateRunResult, error)
	// GetRun returns a run with its steps.
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns lists runs newest first, paginated by an opaque cursor. A page examines at
	// most limits.MaxRunsExamined runs (p.Examine): one that runs out before it is full
	// ends short, possibly empty, with the cursor after the last run it examined, so that
	// following cursors finds every run once; only the last page has no cursor.
	ListRuns(ctx context.Context, p ListRunsParams) ([]*Run, string, error)
	// ClaimRuns leases up to p.Limit due runs (not terminal, WakeAt set and ≤ p.Now, lease
	// free or expired) to p.Owner until p.LeaseUntil, counts each claim in Run.Claims, and
	// returns them with their steps and their leases, the earliest due first.
	ClaimRuns(ctx context.Context, p ClaimRunsParams) ([]Claimed, error)
	// RenewLeases extends p.Leases until p.Until; it returns the IDs whose lease was lost and
	// those whose cancel was requested. Leases p.Held refuses are an error and extend nothing.
	RenewLeases(ctx context.Context, p RenewLeasesParams) (lost, cancelled []string, err error)
	// SaveRun writes the run row and the step records opts.Steps names (nil: all). lease must
	// be a lease on r its owner still holds, else ErrLeaseLost and nothing is written. Unless
	// opts.AttemptStart, it sets Claims to 1. When r.Status is terminal, in the same
	// transaction: its tokens are released, the payloads still queued for them kept on the
	// run as Undelivered (also set on r), its lease dropped, and its parent run (if any)
	// made due now.
	SaveRun(ctx context.Context, lease Lease, r *Run, opts SaveOptions) error
	// ReleaseRun drops lease so another worker can take its run at once, and sets the run's
	// Claims back to 0: the worker gave the run back, it did not vanish. A lease already
	// lost is not an error.
	ReleaseRun(ctx context.Context, lease Lease) error
	// RequestCancel marks a run for cancellation and makes it due now. A finished run →
	// ErrFinished. A run with no lease and still pending may be cancelled by the caller.
	RequestCancel(ctx context.Context, runID string, now time.Time) (*Run, error)
	// QueuePlace reads where queued run r stands in the queue of its key (Run.Concurrency):
	// the active runs of the key (at most MaxQueueActiveShown, in ID order) and how many queued runs of
	// it are older (created before it, or at the same time with a lower ID). Key and Limit
	// are left to the caller.
	//
	// Concurrency limits bind every write of a run with Run.Concurrency set: CreateRun admits
	// it pending only while fewer than its Limit runs of its key (workflow, environment,
	// Key) are active and none is queued, else queued and not due (CreateRunResult.Queued),
	// and ClaimRuns leaves queued runs alone unless their cancel was asked. The write that
	// ends a run of a key (SaveRun), and one that queues a run while slots are free,
	// promotes the oldest queued runs of the key while fewer than each one's limit are
	// active: pending, due and started at the write's time. All of it happens in the one
	// transaction or script of the write.
	QueuePlace(ctx context.Context, r *Run) (QueuePlace, error)
	// WakeRun makes a non-terminal run due at t (if that is sooner than its WakeAt).
	WakeRun(ctx context.Context, runID string, t time.Time) error

	// ClaimToken gives h.Token (in h.Environment) to h.RunID. Already owned by that run →
	// nil. Owned by another active run → *TokenConflictError. Atomic.
	ClaimToken(ctx context.Context, h *Hook) error
	// GetHook returns the active owner of a token, or ErrNotFound.
	GetHook(ctx context.Context, env, token string) (*Hook, error)
	// EnqueuePayload queues a payload for the owner of a token and makes that run due now.
	// No active owner → ErrNotFound.
	EnqueuePayload(ctx context.Context, env, token string, payload json.RawMessage, now time.Time) (runID string, err error)
	// NextPayload returns the oldest payload queued for runID on a token; none → ErrNotFound.
	NextPayload(ctx context.Context, runID, env, token string) (*Payload, error)
	// MissAsk counts one more answer to the question of the hook step at index step of
	// runID that did not fit, atomically (two processes counting at once are both
	// counted), and returns the count for that step: Run.AskMisses.At(step) as GetRun
	// then reads it. A count kept for another step starts again at 1. Nothing else of the
	// run changes. Unknown → ErrNotFound; ended → ErrFinished.
	MissAsk(ctx context.Context, runID string, step int) (int, error)

	// DeleteRun deletes an ended run now, with its step records, queued payloads and hooks.
	// Unknown → ErrNotFound; not ended, or a child run whose parent has not ended (which
	// reads the child's end when it resumes) → ErrRunActive, and nothing is deleted.
	DeleteRun(ctx context.Context, id string) error
	// SweepEnded is one bounded batch of retention (SPEC §2): it walks the runs (of
	// p.WorkflowID, if set) created at or before p.EndedBefore, oldest first, after p.After,
	// examines at most p.Limit of them and deletes, as DeleteRun does, those that ended at
	// or before p.EndedBefore. Runs not ended are never deleted, nor child runs whose
	// parent has not ended.
	SweepEnded(ctx context.Context, p SweepParams) (SweepResult, error)
}
