package schemas

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"

	"github.com/gorunner/gorunner/internal/names"
)

// durationPattern matches the Go duration strings Duration accepts ("0", "1.5s", "1h30m").
const durationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// definitionSchema builds the definition's JSON Schema once.
var definitionSchema = sync.OnceValue(func() []byte {
	r := &jsonschema.Reflector{Anonymous: true}
	s := r.Reflect(&Definition{})
	s.Title = "GoRunner workflow definition"
	s.Description = "A workflow: its name (the MCP tool name), input schema and steps. " +
		"Step kinds registered by an embedder are not described here."
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("schemas: encoding the definition schema: %v", err))
	}
	return out
})

// DefinitionSchema returns the JSON Schema (2020-12) of a workflow definition, generated from
// the Go types, as served at GET /schemas/workflow.json for editors. It describes the
// built-in step kinds; Validate is the full check.
func DefinitionSchema() []byte {
	return slices.Clone(definitionSchema())
}

// JSONSchema describes Duration as a Go duration string.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     durationPattern,
		Description: `A Go duration such as "100ms", "30s", "1h30m" or "24h".`,
		Examples:    []any{"30s", "5m", "24h"},
	}
}

// JSONSchema describes a set step: any JSON value.
func (SetStep) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Description: "Any JSON value; it becomes the step's output. Strings may hold ${{ }} expressions.",
	}
}

// JSONSchemaExtend requires exactly one built-in step kind.
func (Step) JSONSchemaExtend(s *jsonschema.Schema) {
	for _, k := range kindNames() {
		s.OneOf = append(s.OneOf, &jsonschema.Schema{Required: []string{k}})
	}
	if id, ok := s.Properties.Get("id"); ok {
		id.Pattern = names.Pattern
	}
	flowSchema(s)
	describe(s, map[string]string{
		"id":      "The step's ID, unique in the workflow; later steps read its output as steps.<id>.output.",
		"if":      "An expression; the step is skipped when it is null, false, 0 or empty.",
		"timeout": "How long one attempt of the step may take; for an http step at most " + Duration(MaxHTTPTimeout).String() + " (default 30s).",
	})
}

// JSONSchemaExtend requires exactly one of duration and until.
func (SleepStep) JSONSchemaExtend(s *jsonschema.Schema) {
	s.OneOf = []*jsonschema.Schema{{Required: []string{"duration"}}, {Required: []string{"until"}}}
}

// JSONSchemaExtend describes the free-form fields of a definition.
func (Definition) JSONSchemaExtend(s *jsonschema.Schema) {
	props := orderedmap.New[string, *jsonschema.Schema]()
	props.Set("type", &jsonschema.Schema{Const: "object"})
	s.Properties.Set("input", &jsonschema.Schema{
		Type:        "object",
		Description: "JSON Schema (2020-12) of the run input; must have type: object.",
		Properties:  props,
		Required:    []string{"type"},
	})
	s.Properties.Set("output", &jsonschema.Schema{
		Type:        "object",
		Description: "Optional JSON Schema (2020-12) of the run output.",
	})
	describe(s, map[string]string{
		"name":        "The workflow's name and MCP tool name; the gorunner_ prefix is reserved.",
		"toolTimeout": "How long an MCP tool call waits for the run's result.",
		"result":      "The run output, usually an expression such as ${{ steps.done.output }}; default: the last step's output.",
		"start":       "An atomic-start token claimed when the run is admitted.",
		"onFailure":   "Steps run once the run has failed (or was cancelled) and its compensations ran; they see run.error.",
	})
}

// describe sets the descriptions of s's properties.
func describe(s *jsonschema.Schema, texts map[string]string) {
	for name, text := range texts {
		if p, ok := s.Properties.Get(name); ok {
			p.Description = text
		}
	}
}
