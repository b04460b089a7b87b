// Package tools turns published workflows into MCP tool definitions (name, title,
// description, input and output schemas, annotations) and MCP tool calls into run requests
// and back into tool results. It holds no state and knows no transport: mcpserver registers
// what it builds.
package tools

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/schemas"
)

// KeyArgument is the optional tool argument carrying an idempotency key (SPEC §4 rule 11).
const KeyArgument = "idempotencyKey"

// keyProperty is the JSON Schema of the idempotencyKey argument. It has no description:
// what a key does is said once, in the server instructions (Instructions), not again in
// every tool an agent pays to read.
var keyProperty = map[string]any{
	"type":      "string",
	"minLength": 1,
	"maxLength": idempotency.MaxKeyLength,
}

// keySchema is keyProperty compiled: what KeyProblems takes its messages from, so that they
// are the ones the tool's input schema gives.
var keySchema = func() *schemas.InputSchema {
	raw, err := json.Marshal(keyProperty)
	if err != nil {
		panic(err)
	}
	s, err := schemas.CompileInput(raw)
	if err != nil {
		panic(err)
	}
	return s
}()

// Tool is a workflow's MCP tool with what a call of it needs.
type Tool struct {
	// Tool is the MCP tool definition.
	Tool mcp.Tool
	// Definition is the definition the tool was built from.
	Definition *schemas.Definition
	// terms are the words gorunner_find_workflows matches, by field.
	terms terms
}

// FromDefinition builds the tool of a workflow definition: name, title and description as
// the definition says, inputSchema the definition's input schema with the optional
// idempotencyKey property added, the run envelope as outputSchema (its output typed by the
// definition's output schema, when it has one), and all four annotation hints.
func FromDefinition(def *schemas.Definition) (*Tool, error) {
	input, err := InputSchema(def.Input)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", def.Name, err)
	}
	t := mcp.NewToolWithRawSchema(def.Name, def.Description, input)
	t.Title = def.Title
	if t.RawOutputSchema, err = RunOutputSchema(def.Output, true); err != nil {
		return nil, fmt.Errorf("tool %q: %w", def.Name, err)
	}
	t.Annotations = Annotations(def)
	// A run is durable, so every call may run as a task (SPEC §5, Tasks).
	t.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	return &Tool{Tool: withCard(t), Definition: def, terms: termsOf(def)}, nil
}

// InputSchema is a workflow's input schema with the optional idempotencyKey property. An
// input that already declares idempotencyKey is refused: the argument would be ambiguous.
func InputSchema(raw json.RawMessage) (json.RawMessage, error) {
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(raw, &schema); err != nil || schema == nil {
		return nil, errors.New("the input schema must be a JSON object")
	}
	props := map[string]json.RawMessage{}
	if p, ok := schema["properties"]; ok {
		if err := json.Unmarshal(p, &props); err != nil || props == nil {
			return nil, errors.New("the input schema's properties must be an object")
		}
	}
	if _, taken := props[KeyArgument]; taken {
		return nil, fmt.Errorf("the input schema must not declare %q: it is the tool's idempotency key argument", KeyArgument)
	}
	key, err := json.Marshal(keyProperty)
	if err != nil {
		return nil, err
	}
	props[KeyArgument] = key
	if schema["properties"], err = json.Marshal(props); err != nil {
		return nil, err
	}
	return json.Marshal(schema)
}

// Annotations sets all four MCP hints explicitly, since MCP reads a missing hint as the
// risky value. The title is the tool's own (not repeated here). What a definition says
// wins; otherwise:
//   - readOnlyHint: false — a workflow is assumed to change something.
//   - destructiveHint: true unless read-only — MCP's own assumption for a tool that writes.
//   - idempotentHint: true for a read-only workflow or one with a start token (a repeat
//     with the same arguments joins the run holding the token), else false.
//   - openWorldHint: true when a step can reach outside GoRunner (http, a child workflow,
//     an embedder's custom kind), else false.
func Annotations(def *schemas.Definition) mcp.ToolAnnotation {
	a := def.Annotations
	if a == nil {
		a = &schemas.Annotations{}
	}
	readOnly := orDefault(a.ReadOnly, false)
	return mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(readOnly),
		DestructiveHint: mcp.ToBoolPtr(orDefault(a.Destructive, !readOnly)),
		IdempotentHint:  mcp.ToBoolPtr(orDefault(a.Idempotent, readOnly || def.Start != nil)),
		OpenWorldHint:   mcp.ToBoolPtr(orDefault(a.OpenWorld, schemas.ReachesOut(def.Steps))),
	}
}

func orDefault(v *bool, def bool) bool {
	if v == nil {
		return def
	}
	return *v
}
