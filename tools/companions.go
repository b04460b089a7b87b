package tools

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/runner"
)

// Names of GoRunner's own tools. They use the "gorunner_" prefix no workflow may take.
const (
	GetRun        = "gorunner_get_run"
	ListRuns      = "gorunner_list_runs"
	CancelRun     = "gorunner_cancel_run"
	ResumeHook    = "gorunner_resume_hook"
	FindWorkflows = "gorunner_find_workflows"
	RunWorkflow   = "gorunner_run_workflow"
	// Miss answers a call of a tool the session does not list: it is never listed itself.
	Miss = "gorunner_unknown_tool"
)

// MaxWaitSeconds bounds gorunner_get_run's waitSeconds; MaxListLimit gorunner_list_runs'
// limit, DefaultListLimit its default; MaxFound is how many workflows
// gorunner_find_workflows answers with at most.
const (
	MaxWaitSeconds   = 60
	MaxListLimit     = 100
	DefaultListLimit = 20
	MaxFound         = 10
)

// Instructions are the server instructions: what every workflow tool has in common, said
// once, so that each tool carries only what differs.
const Instructions = "Each workflow tool starts a durable run of that workflow and answers with the run envelope " +
	"{runId, status, output, error, replayed, reused, waitingOn}: status is pending, running, waiting, completed, failed or cancelled; " +
	"output is present once completed (typed by the tool's outputSchema), error {code, message, step} once failed; a failed or cancelled run answers with isError; " +
	"replayed is true when the idempotencyKey had been used; reused is true when the run is the one already holding the workflow's start token; waitingOn says what a waiting run waits for (hook: {token, message, schema}, the question and the payload's JSON Schema when the hook asks; sleepUntil: a time). " +
	"A call waits a while for the run; when status is pending, running or waiting the run goes on: continue with gorunner_get_run {runId, waitSeconds} " +
	"(up to 60 s per call); a run waiting on a hook continues when gorunner_resume_hook {token, payload} sends the payload. " +
	"idempotencyKey (optional, 1-255 characters) makes a retry safe: the same key with the same arguments never starts a second run " +
	"and answers with the first run's current state; the same key with other arguments is refused. " +
	"Arguments that do not match a tool's inputSchema are answered with isError and one line per problem: fix them and call again. " +
	"When there are many workflows (or with /mcp?tools=search), tools/list offers gorunner_find_workflows {query, tag} and " +
	"gorunner_run_workflow {workflow, arguments, idempotencyKey} instead of one tool per workflow; both calls behave as the workflow's own tool."

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
	Cursor   string `json:"cursor,omitempty"`
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

// FindArgs are gorunner_find_workflows' arguments.
type FindArgs struct {
	Query string `json:"query"`
	Tag   string `json:"tag,omitempty"`
}

// RunWorkflowArgs are gorunner_run_workflow's arguments, idempotencyKey aside (it is split
// off as for every workflow tool).
type RunWorkflowArgs struct {
	Workflow  string          `json:"workflow"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MissArgs are what a call of an unknown tool is turned into: the name called.
type MissArgs struct {
	Name string `json:"name"`
}

// RunList is gorunner_list_runs' structuredContent: a page of runs, and the cursor of the
// next one (absent on the last).
type RunList struct {
	Runs       []Result `json:"runs"`
	NextCursor string   `json:"nextCursor,omitempty"`
}

var runIDProperty = map[string]any{"type": "string", "minLength": 1}

// Companions are the definitions of GoRunner's own tools, the same in every environment:
// the run tools, the catalog search tools, the (never listed) Miss tool and the authoring
// tools (listed only with workflows:write).
func Companions() []mcp.Tool {
	envelope := mustOutput(RunOutputSchema(nil, false))
	return append([]mcp.Tool{
		withCard(companion(GetRun, "Get a run",
			"A run's current state. With waitSeconds (up to 60), waits until it is no longer pending or running.",
			object(map[string]any{
				"runId":       runIDProperty,
				"waitSeconds": map[string]any{"type": "number", "minimum": 0, "maximum": MaxWaitSeconds},
			}, "runId"),
			envelope, readOnlyHints)),
		companion(ListRuns, "List runs",
			"Runs, newest first, optionally of one workflow and with one status, a page at a time. "+
				"A call looks through a bounded number of runs, so a page may hold fewer runs than limit, even none, "+
				"and still have nextCursor: pass it as cursor to go on. No nextCursor: no more runs match.",
			object(map[string]any{
				"workflow": map[string]any{"type": "string", "minLength": 1},
				"status":   map[string]any{"type": "string", "enum": runner.Statuses()},
				"limit":    map[string]any{"type": "integer", "minimum": 1, "maximum": MaxListLimit, "description": "default 20"},
				"cursor":   map[string]any{"type": "string", "minLength": 1, "description": "nextCursor of the previous page"},
			}),
			mustJSON(map[string]any{"type": "object", "properties": map[string]any{
				"runs":       map[string]any{"type": "array", "items": json.RawMessage(envelope)},
				"nextCursor": map[string]any{"type": "string"},
			}}),
			readOnlyHints),
		companion(CancelRun, "Cancel a run",
			"Cancels a run that has not finished: the step running is interrupted, the rest cancelled.",
			object(map[string]any{"runId": runIDProperty}, "runId"),
			envelope, hints{destructive: true, idempotent: true}),
		companion(ResumeHook, "Resume a hook",
			"Sends a payload to the run waiting on a hook token (waitingOn.hook.token); the run continues. "+
				"When the hook asks (waitingOn.hook.schema), the payload must fit that schema. "+
				"delivery is delivered when a hook step took the payload, queued when none waits on the token now.",
			object(map[string]any{
				"token":   map[string]any{"type": "string", "minLength": 1},
				"payload": map[string]any{"description": "any JSON value (fitting waitingOn.hook.schema when the hook has one): the hook step's output"},
			}, "token"),
			mustOutput(ResumedOutputSchema()), hints{}),
		companion(FindWorkflows, "Find workflows",
			"Workflows matching the words of query in their name, title, description or tags, best first, with their input schema.",
			object(map[string]any{
				"query": map[string]any{"type": "string", "minLength": 1, "maxLength": MaxQueryLength},
				"tag":   map[string]any{"type": "string", "minLength": 1},
			}, "query"),
			mustJSON(map[string]any{"type": "object", "properties": map[string]any{"workflows": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "properties": map[string]any{
					"name": map[string]any{"type": "string"}, "title": map[string]any{"type": "string"},
					"description": map[string]any{"type": "string"}, "inputSchema": map[string]any{"type": "object"},
				},
			}}}}),
			readOnlyHints),
		withCard(companion(RunWorkflow, "Run a workflow",
			"Runs a workflow by name, as its own tool would: arguments must match its input schema (see gorunner_find_workflows).",
			object(map[string]any{
				"workflow":  map[string]any{"type": "string", "minLength": 1},
				"arguments": map[string]any{"type": "object"},
				KeyArgument: keyProperty,
			}, "workflow"),
			mustOutput(RunOutputSchema(nil, true)), hints{destructive: true, openWorld: true})),
		companion(Miss, "Unknown tool",
			"Answers a call of a tool that is not listed.",
			object(map[string]any{"name": map[string]any{"type": "string"}}, "name"),
			nil, readOnlyHints),
	}, authoringTools()...)
}

// hints are a companion's annotation hints.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

// readOnlyHints are the hints of a companion that only reads.
var readOnlyHints = hints{readOnly: true, idempotent: true}

// companion builds one of GoRunner's own tools.
func companion(name, title, description string, input, output json.RawMessage, h hints) mcp.Tool {
	t := mcp.NewToolWithRawSchema(name, description, input)
	t.Title = title
	t.RawOutputSchema = output
	t.Annotations = mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(h.readOnly),
		DestructiveHint: mcp.ToBoolPtr(h.destructive),
		IdempotentHint:  mcp.ToBoolPtr(h.idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(h.openWorld),
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

// mustOutput is an envelope this package builds without an output schema; it cannot fail.
func mustOutput(schema json.RawMessage, err error) json.RawMessage {
	if err != nil {
		panic(err)
	}
	return schema
}
