package schemas

import (
	"encoding/json"
	"fmt"
	"github.com/gorunner/gorunner/internal/names"
	"strings"
)

// Problem is one thing wrong with a definition or a run input.
type Problem struct {
	// Path is the JSON pointer of the offending value ("" for the whole document).
	Path string `json:"path"`
	// Message says what is wrong, in words for the person or agent that fixes it.
	Message string `json:"message"`
}

// ValidateOptions tune Validate.
type ValidateOptions struct {
	// CustomKinds are the step kinds an embedder registered, besides the built-in ones.
	CustomKinds map[string]bool
}

// ValidationError carries every problem found in a definition or an input.
type ValidationError struct {
	Problems []Problem
}

// Error implements error.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid"
	}
	first := e.Problems[0]
	msg := first.Message
	if first.Path != "" {
		msg = first.Path + ": " + msg
	}
	if n := len(e.Problems) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more problems)", n)
	}
	return msg
}

// MaxSteps is the most steps one definition may have. It keeps a run's state, its event
// history and the cost of validating and canonicalising a definition bounded.
const MaxSteps = 1000

// ReservedPrefix starts the names of GoRunner's own MCP tools; no workflow may use it.
const ReservedPrefix = "gorunner_"

// Parse decodes and validates a definition. A definition that cannot be decoded is an error
// (a *DecodeError); one that decodes but is invalid comes back with its problems.
func Parse(data []byte, opts ValidateOptions) (*Definition, []Problem, error) {
	d, err := Decode(data)
	if err != nil {
		return nil, nil, err
	}
	return d, Validate(d, opts), nil
}

// Validate reports every problem of d, each with the JSON pointer of the value at fault:
// the name, title and description (their length, and see badTextRune), the input and output schemas (and
// their titles and descriptions), the annotations (see annotations), each step (its ID, kind, required fields, retry
// policy, expressions and the steps they read), the result and the start token. A nil or
// empty answer means d is valid.
func Validate(d *Definition, opts ValidateOptions) []Problem {
	v := &validator{opts: opts, list: "/steps", frames: []frame{{ids: map[string]int{}}}}
	v.name(d.Name)
	v.text("/title", "title", d.Title)
	v.text("/description", "description", d.Description)
	v.input(d.Input)
	if len(d.Output) > 0 {
		v.schema("/output", d.Output)
		v.schemaTexts("/output", d.Output)
	}
	v.annotations(d)
	v.steps(d.Steps)
	v.countSteps(d)
	v.onFailure(d.OnFailure, len(d.Steps))
	if d.Result != nil {
		v.template("/result", d.Result, len(d.Steps))
	}
	if d.Start != nil {
		v.start(d.Start)
	}
	v.tags(d.Tags)
	v.schedules(d)
	if d.Concurrency != nil {
		v.concurrency(d.Concurrency)
	}
	return v.problems
}

// validator collects problems.
type validator struct {
	opts     ValidateOptions
	problems []Problem
	// list is the JSON pointer of the step list being validated ("/steps" at the top).
	list string
	// frames are the scopes of the step lists being validated, outermost first.
	frames []frame
	// nesting is how many compound steps hold the list being validated.
	nesting int
}

func (v *validator) add(path, format string, args ...any) {
	v.problems = append(v.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) name(name string) {
	switch {
	case name == "":
		v.add("/name", "name is required")
	case !names.Valid(name):
		v.add("/name", "name %q must match %s", name, names.Pattern)
	case strings.HasPrefix(name, ReservedPrefix):
		v.add("/name", "the %q prefix is reserved for GoRunner's own tools", ReservedPrefix)
	}
}

func (v *validator) input(raw json.RawMessage) {
	if len(raw) == 0 || isNull(raw) {
		v.add("/input", "input is required: a JSON Schema with type: object")
		return
	}
	var top struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &top) != nil || top.Type != "object" {
		v.add("/input/type", "the input schema must have type: object")
	}
	if _, ok := top.Properties["idempotencyKey"]; ok {
		v.add("/input/properties/idempotencyKey", "idempotencyKey is reserved: GoRunner adds it to every tool for keyed replay")
	}
	v.schema("/input", raw)
	v.schemaTexts("/input", raw)
}

// MaxTags is how many tags a definition may carry.
const MaxTags = 16

// tags must be names (names.Pattern), each once, at most MaxTags.
func (v *validator) tags(tags []string) {
	if len(tags) > MaxTags {
		v.add("/tags", "at most %d tags are allowed, got %d", MaxTags, len(tags))
	}
	seen := map[string]bool{}
	for i, t := range tags {
		switch {
		case !names.Valid(t):
			v.add(fmt.Sprintf("/tags/%d", i), "tag %q must match %s", t, names.Pattern)
		case seen[t]:
			v.add(fmt.Sprintf("/tags/%d", i), "tag %q is repeated", t)
		}
		seen[t] = true
	}
}

// schema reports the problems of the JSON Schema raw found at path.
func (v *validator) schema(path string, raw json.RawMessage) {
	if _, err := compileSchema(raw); err != nil {
		for _, p := range schemaProblems(err) {
			v.add(path+p.Path, "%s", p.Message)
		}
	}
}

func (v *validator) steps(steps []Step) {
	if len(steps) == 0 {
		v.add(v.list, "at least one step is required")
	}
	for i := range steps {
		v.stepID(i, steps[i].ID)
	}
	for i := range steps {
		v.step(fmt.Sprintf("%s/%d", v.list, i), &steps[i], i)
	}
}

func (v *validator) stepID(i int, id string) {
	path := fmt.Sprintf("%s/%d/id", v.list, i)
	ids := v.frames[len(v.frames)-1].ids
	switch first, dup := ids[id]; {
	case id == "":
		v.add(path, "step id is required")
	case !names.Valid(id):
		v.add(path, "step id %q must match %s", id, names.Pattern)
	case dup:
		v.add(path, "step id %q is already used by step %d", id, first)
	default:
		ids[id] = i
	}
}

func (v *validator) start(s *Start) {
	if s.Token == "" {
		v.add("/start/token", "start.token is required")
	} else if t := v.compile("/start/token", s.Token); t != nil && len(t.Refs()) > 0 {
		v.add("/start/token", "start.token is evaluated before any step runs; it can use input, not steps")
	}
	v.onConflict("/start/onConflict", s.OnConflict)
}

func (v *validator) onConflict(path, policy string) {
	if policy == "" {
		return
	}
	for _, p := range OnConflictPolicies() {
		if p == policy {
			return
		}
	}
	v.add(path, "onConflict %q must be one of %s", policy, strings.Join(OnConflictPolicies(), ", "))
}
