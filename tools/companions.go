package tools

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// Names of GoRunner's own tools. They use the "gorunner_" prefix no workflow may take.
const (
	GetRun     = "gorunner_get_run"
	ListRuns   = "gorunner_list_runs"
	CancelRun  = "gorunner_cancel_run"
	ResumeHook = "gorunner_resume_hook"
)

// MaxWaitSeconds bounds gorunner_get_run's waitSeconds; MaxListLimit gorunner_list_runs'
// limit, DefaultListLimit its default.
const (
	MaxWaitSeconds   = 60
	MaxListLimit     = 100
	DefaultListLimit = 20
)

// GetRunArgs are gorunner_get_run's arguments.
type GetRunArgs struct {
	RunID       string  `json:"runId"`
	WaitSeconds float64 `json:"waitSeconds,omitempty"`
}

// ListRunsArgs are gorunner_list_runs' arguments.
type ListRunsArgs struct {
	Workflow string `json:"workflow,omitempty"`
	Status   string `json:"status,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

// CancelRunArgs are gorunner_cancel_run's arguments.
type CancelRunArgs struct {
	RunID string `json:"runId"`
}

// ResumeHookArgs are gorunner_resume_hook's arguments.
type ResumeHookArgs struct {
	Token   string          `json:"token"`
	Payload json.RawMessage `json:"payload"`
}

// RunList is gorunner_list_runs' structuredContent.
type RunList struct {
	Runs []Result `json:"runs"`
}

var runIDProperty = map[string]any{"type": "string", "minLength": 1, "description": "the run's ID"}

// Companions are the definitions of GoRunner's own tools, the same in every environment.
func Companions() []mcp.Tool {
	return []mcp.Tool{
		companion(GetRun, "Get a run",
			"Get a run's current state: status, output, error. With waitSeconds (up to 60) the answer waits until the run is no longer pending or running. Use it to continue a workflow call that answered with status pending, running or waiting.",
			object(map[string]any{
				"runId":       runIDProperty,
				"waitSeconds": map[string]any{"type": "number", "minimum": 0, "maximum": MaxWaitSeconds, "description": "how long to wait for the run to stop running"},
			}, "runId"),
			RunOutputSchema(false), readOnlyHints),
		companion(ListRuns, "List runs",
			"List runs, newest first, optionally of one workflow and with one status.",
			object(map[string]any{
				"workflow": map[string]any{"type": "string", "description": "a workflow name or ID"},
				"status":   map[string]any{"type": "string", "enum": []string{"pending", "running", "waiting", "completed", "failed", "cancelled"}},
				"limit":    map[string]any{"type": "integer", "minimum": 1, "maximum": MaxListLimit, "description": "at most this many runs (default 20)"},
			}),
			mustJSON(map[string]any{"type": "object", "properties": map[string]any{"runs": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": runProperties()}}}, "required": []string{"runs"}}),
			readOnlyHints),
		companion(CancelRun, "Cancel a run",
			"Cancel a run that has not finished: the step running is interrupted and the remaining steps are cancelled.",
			object(map[string]any{"runId": runIDProperty}, "runId"),
			RunOutputSchema(false), hints{destructive: true, idempotent: true}),
		companion(ResumeHook, "Resume a hook",
			"Send a payload to the run waiting on a hook token; the run's hook step takes it and the run continues.",
			object(map[string]any{
				"token":   map[string]any{"type": "string", "minLength": 1, "description": "the hook token, e.g. order:1001"},
				"payload": map[string]any{"description": "any JSON value, handed to the hook step as its output"},
			}, "token"),
			RunOutputSchema(false), hints{}),
	}
}

// hints are a companion's annotation hints; none reaches outside GoRunner.
type hints struct {
	readOnly, destructive, idempotent bool
}

// readOnlyHints are the hints of a companion that only reads.
var readOnlyHints = hints{readOnly: true, idempotent: true}

// companion builds one of GoRunner's own tools.
func companion(name, title, description string, input, output json.RawMessage, h hints) mcp.Tool {
	t := mcp.NewToolWithRawSchema(name, description, input)
	t.Title = title
	t.RawOutputSchema = output
	t.Annotations = mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    mcp.ToBoolPtr(h.readOnly),
		DestructiveHint: mcp.ToBoolPtr(h.destructive),
		IdempotentHint:  mcp.ToBoolPtr(h.idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	}
	return t
}

func object(props map[string]any, required ...string) json.RawMessage {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return mustJSON(s)
}
