package tools

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/internal/names"
	"github.com/gorunner/gorunner/schemas"
)

// Names of the authoring tools (SPEC §5), listed and callable only with workflows:write.
const (
	ValidateWorkflow = "gorunner_validate_workflow"
	SaveWorkflow     = "gorunner_save_workflow"
	TestWorkflow     = "gorunner_test_workflow"
	PublishWorkflow  = "gorunner_publish_workflow"
	GetWorkflow      = "gorunner_get_workflow"
	WorkflowSchema   = "gorunner_workflow_schema"
)

// IsAuthoring reports whether name is one of the authoring tools.
func IsAuthoring(name string) bool {
	switch name {
	case ValidateWorkflow, SaveWorkflow, TestWorkflow, PublishWorkflow, GetWorkflow, WorkflowSchema:
		return true
	}
	return false
}

// Definition is a definition argument: a JSON object, or a YAML or JSON document sent as a
// string (what an agent holding a YAML file sends).
type Definition json.RawMessage

// UnmarshalJSON keeps the value as sent.
func (d *Definition) UnmarshalJSON(b []byte) error {
	*d = bytes.Clone(b)
	return nil
}

// Document is the definition document the catalog parses: the string's text, or the
// object's JSON.
func (d Definition) Document() []byte {
	var text string
	if err := json.Unmarshal(d, &text); err == nil {
		return []byte(text)
	}
	return d
}

// ValidateArgs are gorunner_validate_workflow's arguments.
type ValidateArgs struct {
	Definition Definition `json:"definition"`
}

// SaveArgs are gorunner_save_workflow's arguments.
type SaveArgs struct {
	Definition  Definition `json:"definition"`
	ExpectedRev int        `json:"expectedRev,omitempty"`
}

// TestArgs are gorunner_test_workflow's arguments, idempotencyKey aside (it is split off
// as for every workflow tool).
type TestArgs struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"`
}

// NameArgs are the arguments of gorunner_publish_workflow and gorunner_get_workflow.
type NameArgs struct {
	Name string `json:"name"`
}

// Validated is gorunner_validate_workflow's structuredContent.
type Validated struct {
	Valid    bool              `json:"valid"`
	Problems []schemas.Problem `json:"problems"`
}

// Saved is gorunner_save_workflow's structuredContent: the draft's name and rev after the
// save, or, with problems, nothing saved and the current rev (absent for a new workflow).
type Saved struct {
	Name     string            `json:"name"`
	Rev      int               `json:"rev,omitempty"`
	Problems []schemas.Problem `json:"problems"`
}

// Published is gorunner_publish_workflow's structuredContent: the version, and whether
// this call made it (false: the draft had not changed since it was published).
type Published struct {
	Name        string          `json:"name"`
	Version     int             `json:"version"`
	Hash        string          `json:"hash"`
	PublishedAt time.Time       `json:"publishedAt"`
	Created     bool            `json:"created"`
	Definition  json.RawMessage `json:"definition"`
}

// VersionSummary is one published version in gorunner_get_workflow's answer.
type VersionSummary struct {
	Version     int       `json:"version"`
	Hash        string    `json:"hash"`
	PublishedAt time.Time `json:"publishedAt"`
}

// Authored is gorunner_get_workflow's structuredContent.
type Authored struct {
	Name       string           `json:"name"`
	Rev        int              `json:"rev"`
	Published  bool             `json:"published"`
	Definition json.RawMessage  `json:"definition"`
	Versions   []VersionSummary `json:"versions"`
}

// SchemaGuide is gorunner_workflow_schema's structuredContent.
type SchemaGuide struct {
	Schema json.RawMessage `json:"schema"`
	Guide  string          `json:"guide"`
}

// Guide is the short guide to writing a definition that gorunner_workflow_schema answers
// beside the JSON Schema, for an agent writing its first workflow.
const Guide = "A definition has a name (the tool's name, " + names.Pattern + "), an input JSON Schema, " +
	"steps run in order and an optional result. Each step has an id and exactly one kind: " +
	"set (builds a JSON value), http {method, url, headers, body, connection} (one request), " +
	"hook {token} (waits for a payload), sleep {duration|until}, run {action, runId|token} (acts on another run), " +
	"workflow {name, input} (a child run of a published workflow), fail {message}, " +
	"mcp {url, tool, arguments, connection} (calls a tool of another MCP server); " +
	"steps that hold steps: parallel {failFast, branches: [{id, steps}]}, foreach {items, as, concurrency, steps}, " +
	"loop {until, maxIterations, steps}; optional if, retry, timeout, onError (fail|continue) and compensate (a step run " +
	"if the run fails later); a top-level onFailure lists steps run after a failure. " +
	"Strings may hold expressions ${{ ... }} reading input, steps.<id>.output, run, and item/index (foreach) or iteration (loop). " +
	"Write it with " + SaveWorkflow + " (" + ValidateWorkflow + " lists every problem with its JSON pointer), " +
	"run the draft with " + TestWorkflow + ", then " + PublishWorkflow + " makes it a tool."

var (
	definitionProperty = map[string]any{"type": []string{"object", "string"},
		"description": "the definition: a JSON object, or a YAML or JSON document as a string"}
	workflowNameProperty = map[string]any{"type": "string", "minLength": 1}
	problemsProperty     = map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
		"path": map[string]any{"type": "string"}, "message": map[string]any{"type": "string"},
	}}}
)

// authoringTools are the definitions of the authoring tools.
func authoringTools() []mcp.Tool {
	return []mcp.Tool{
		companion(ValidateWorkflow, "Validate a workflow",
			"Checks a definition and lists every problem with its JSON pointer; saves nothing.",
			object(map[string]any{"definition": definitionProperty}, "definition"),
			mustJSON(map[string]any{"type": "object", "properties": map[string]any{
				"valid": map[string]any{"type": "boolean"}, "problems": problemsProperty,
			}}),
			readOnlyHints),
		companion(SaveWorkflow, "Save a workflow draft",
			"Creates the workflow named in the definition, or replaces its draft (expectedRev: only if still at that rev). "+
				"An invalid definition is not saved: isError, with every problem.",
			object(map[string]any{
				"definition":  definitionProperty,
				"expectedRev": map[string]any{"type": "integer", "minimum": 1},
			}, "definition"),
			mustJSON(map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string"}, "rev": map[string]any{"type": "integer"}, "problems": problemsProperty,
			}}),
			hints{destructive: true}),
		withCard(companion(TestWorkflow, "Test-run a draft",
			"Runs the workflow's draft in the test environment, as its tool would.",
			object(map[string]any{
				"name":      workflowNameProperty,
				"input":     map[string]any{"type": "object"},
				KeyArgument: keyProperty,
			}, "name"),
			mustOutput(RunOutputSchema(nil, true)), hints{destructive: true, openWorld: true})),
		companion(PublishWorkflow, "Publish a workflow",
			"Publishes the draft as a new version: its tool is callable at once. An unchanged draft answers the latest version.",
			object(map[string]any{"name": workflowNameProperty}, "name"),
			mustJSON(map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string"}, "version": map[string]any{"type": "integer"},
				"hash": map[string]any{"type": "string"}, "publishedAt": map[string]any{"type": "string"},
				"created": map[string]any{"type": "boolean"}, "definition": map[string]any{"type": "object"},
			}}),
			hints{destructive: true, idempotent: true}),
		companion(GetWorkflow, "Get a workflow",
			"A workflow's draft definition, rev and published versions.",
			object(map[string]any{"name": workflowNameProperty}, "name"),
			mustJSON(map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string"}, "rev": map[string]any{"type": "integer"},
				"published": map[string]any{"type": "boolean"}, "definition": map[string]any{"type": "object"},
				"versions": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
			}}),
			readOnlyHints),
		companion(WorkflowSchema, "Workflow definition schema",
			"The JSON Schema of a workflow definition and a short guide to the step kinds.",
			object(map[string]any{}),
			mustJSON(map[string]any{"type": "object", "properties": map[string]any{
				"schema": map[string]any{"type": "object"}, "guide": map[string]any{"type": "string"},
			}}),
			readOnlyHints),
	}
}
