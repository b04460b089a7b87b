// Package schemas defines GoRunner's workflow definition format: its Go types, strict JSON
// and YAML decoding, validation with JSON-pointer problems, the definition's own JSON Schema,
// and validation of run inputs against a workflow's input schema. It knows nothing about
// HTTP, MCP or storage.
package schemas

import (
	"encoding/json"
)

// Definition is one workflow definition: a draft or a published version.
type Definition struct {
	Name        string          `json:"name" jsonschema:"pattern=^[a-z0-9][a-z0-9_-]{0\\,63}$"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output,omitempty"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	ToolTimeout Duration        `json:"toolTimeout,omitempty"`
	Steps       []Step          `json:"steps"`
	// OnFailure runs once the run has failed (or was cancelled) and compensated.
	OnFailure []Step `json:"onFailure,omitempty"`
	Result    any    `json:"result,omitempty"`
	Start     *Start `json:"start,omitempty"`
	// Tags group workflows, for finding them (gorunner_find_workflows) and for token scopes.
	Tags []string `json:"tags,omitempty" jsonschema:"maxItems=16"`
	// Schedules start runs of the published version on a clock (schedules.go).
	Schedules []Schedule `json:"schedules,omitempty" jsonschema:"maxItems=16"`
	// Retention shortens how long the workflow's ended runs are kept (SPEC §2); 0: the
	// server's --retention.
	Retention Retention `json:"retention,omitempty"`
	// Concurrency bounds the workflow's active runs per key (concurrency.go); nil: none.
	Concurrency *Concurrency `json:"concurrency,omitempty"`
}

// Annotations are the MCP tool hints a definition may set. Nil means "not said".
type Annotations struct {
	ReadOnly    *bool `json:"readOnly,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"openWorld,omitempty"`
}

// Start declares an atomic-start token claimed in the same transaction that admits a run.
type Start struct {
	Token      string `json:"token"`
	OnConflict string `json:"onConflict,omitempty" jsonschema:"enum=fail,enum=reject,enum=adopt,enum=forward,enum=supersede,enum=continue"`
}

// Conflict policies for hook and start tokens (SPEC §6).
const (
	OnConflictFail      = "fail"
	OnConflictReject    = "reject"
	OnConflictAdopt     = "adopt"
	OnConflictForward   = "forward"
	OnConflictSupersede = "supersede"
	OnConflictContinue  = "continue"
)

// OnConflictPolicies lists every conflict policy word.
func OnConflictPolicies() []string {
	return []string{OnConflictFail, OnConflictReject, OnConflictAdopt, OnConflictForward, OnConflictSupersede, OnConflictContinue}
}

// Retry is a step's retry policy.
type Retry struct {
	MaxAttempts        int      `json:"maxAttempts,omitempty" jsonschema:"minimum=1,maximum=100"`
	InitialInterval    Duration `json:"initialInterval,omitempty"`
	MaxInterval        Duration `json:"maxInterval,omitempty"`
	BackoffCoefficient float64  `json:"backoffCoefficient,omitempty" jsonschema:"minimum=1"`
}

// Step is one entry of a definition's steps. Exactly one kind is set: one of the built-in
// kind fields, or one entry in Custom for a kind an embedder registered.
type Step struct {
	ID      string   `json:"id"`
	If      string   `json:"if,omitempty"`
	Retry   *Retry   `json:"retry,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
	// OnError is what a failure of the step does: fail (default) the run, or continue
	// with the step failed (steps.<id>.error set, its output null).
	OnError string `json:"onError,omitempty" jsonschema:"enum=fail,enum=continue"`
	// Compensate runs if the run fails or is cancelled after this step completed.
	Compensate *Step `json:"compensate,omitempty"`

	Set      *SetStep      `json:"set,omitempty"`
	HTTP     *HTTPStep     `json:"http,omitempty"`
	Hook     *HookStep     `json:"hook,omitempty"`
	Sleep    *SleepStep    `json:"sleep,omitempty"`
	Run      *RunStep      `json:"run,omitempty"`
	Workflow *WorkflowStep `json:"workflow,omitempty"`
	Fail     *FailStep     `json:"fail,omitempty"`
	MCP      *MCPStep      `json:"mcp,omitempty"`
	Parallel *ParallelStep `json:"parallel,omitempty"`
	Foreach  *ForeachStep  `json:"foreach,omitempty"`
	Loop     *LoopStep     `json:"loop,omitempty"`

	// Custom holds the bodies of step kinds that are not built in, by kind name.
	Custom map[string]json.RawMessage `json:"-"`
}

// SetStep builds a JSON value; its output is the value. Any JSON value, expressions inside.
// In JSON it is the bare value: "set": {"status": "done"}, or even "set": null.
type SetStep struct {
	Value any
}

// HTTPStep makes one HTTP request.
type HTTPStep struct {
	Method         string            `json:"method,omitempty" jsonschema:"enum=GET,enum=HEAD,enum=POST,enum=PUT,enum=PATCH,enum=DELETE,enum=OPTIONS"`
	URL            string            `json:"url"`
	Connection     string            `json:"connection,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Query          map[string]string `json:"query,omitempty"`
	Body           any               `json:"body,omitempty"`
	IdempotencyKey *bool             `json:"idempotencyKey,omitempty"`
}

// HookStep registers a token and waits for a payload.
type HookStep struct {
	Token      string   `json:"token"`
	OnConflict string   `json:"onConflict,omitempty" jsonschema:"enum=fail,enum=reject,enum=adopt,enum=forward,enum=supersede,enum=continue"`
	Timeout    Duration `json:"timeout,omitempty"`
	Payload    any      `json:"payload,omitempty"`
	// Ask, when set, asks the person for the payload through the MCP client (SPEC §5).
	Ask *HookAsk `json:"ask,omitempty"`
}

// SleepStep waits for a duration or until a time (RFC 3339, may be an expression).
type SleepStep struct {
	Duration Duration `json:"duration,omitempty"`
	Until    string   `json:"until,omitempty"`
}

// Run step actions.
const (
	RunActionStatus = "status"
	RunActionResult = "result"
	RunActionCancel = "cancel"
	RunActionResume = "resume"
)

// RunStep acts on another run.
type RunStep struct {
	Action  string `json:"action" jsonschema:"enum=status,enum=result,enum=cancel,enum=resume"`
	RunID   string `json:"runId,omitempty"`
	Token   string `json:"token,omitempty"`
	Payload any    `json:"payload,omitempty"`
}

// WorkflowStep starts a child run of a published workflow and waits for its output.
type WorkflowStep struct {
	Name  string `json:"name" jsonschema:"minLength=1"`
	Input any    `json:"input,omitempty"`
}

// FailStep fails the run.
type FailStep struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// Built-in step kind names.
const (
	KindSet      = "set"
	KindHTTP     = "http"
	KindHook     = "hook"
	KindSleep    = "sleep"
	KindRun      = "run"
	KindWorkflow = "workflow"
	KindFail     = "fail"
)
