package schemas

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaURL is where a compiled schema is registered; it resolves nothing outside itself.
const schemaURL = "mem://gorunner/schema.json"

// InputSchema is a compiled JSON Schema that run inputs are checked against.
type InputSchema struct {
	schema *jsonschema.Schema
}

// CompileInput compiles a workflow's input schema (JSON Schema 2020-12 unless it says
// otherwise in $schema). References to other documents are not loaded; a schema whose
// validation could take exponential time is refused (see MaxSchemaApplications).
// Formats (email, date-time, uuid…) are asserted, not only annotations.
// An invalid schema is a *ValidationError whose problem paths point into the schema.
func CompileInput(schema json.RawMessage) (*InputSchema, error) {
	s, err := compileSchema(schema)
	if err != nil {
		return nil, &ValidationError{Problems: schemaProblems(err)}
	}
	return &InputSchema{schema: s}, nil
}

// Validate checks input, a JSON value as encoding/json decodes it — numbers as float64 or,
// with UseNumber, as json.Number: both work. It returns one Problem per violation, its Path
// the JSON pointer of the value in the input ("/orderId" for a missing required property),
// sorted by path; nil when input is valid.
func (s *InputSchema) Validate(input any) []Problem {
	err := s.schema.Validate(input)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Message: err.Error()}}
	}
	return sortProblems(leafProblems(ve, nil))
}

// MaxSchemaObjects bounds the JSON objects of one schema document (its schemas and the maps
// holding them, such as properties). The validator library's
// compile takes time that grows with their square (0.3 s at 5,000 objects, 3 s at 20,000,
// minutes within the body limit), so a larger schema is refused before it is compiled.
const MaxSchemaObjects = 5000

// compileSchema compiles one self-contained JSON Schema document.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	if objectsOver(doc, MaxSchemaObjects) {
		return nil, fmt.Errorf("the schema holds over %d JSON objects; split it or share more of it", MaxSchemaObjects)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	if err := checkSchemaCost(c, doc, s); err != nil {
		return nil, err
	}
	return s, nil
}

// refuseLoader loads nothing: schemas must not reach files or the network.
type refuseLoader struct{}

// Load implements jsonschema.URLLoader.
func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("references to other documents (%s) are not supported", url)
}

// schemaProblems turns a schema compile error into problems with paths inside the schema.
func schemaProblems(err error) []Problem {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		return sortProblems(leafProblems(ve, nil))
	}
	var lue *jsonschema.LoadURLError
	if errors.As(err, &lue) {
		return []Problem{{Message: fmt.Sprintf("cannot resolve %s: references to other documents are not supported", lue.URL)}}
	}
	return []Problem{{Message: "invalid JSON Schema: " + err.Error()}}
}

var printer = message.NewPrinter(language.English)

// leafProblems appends the leaves of e's cause tree. A missing required property or a
// property that is not allowed gets the path of that property itself.
func leafProblems(e *jsonschema.ValidationError, out []Problem) []Problem {
	for _, c := range e.Causes {
		out = leafProblems(c, out)
	}
	if len(e.Causes) > 0 {
		return out
	}
	path := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			out = append(out, Problem{Path: path + "/" + escapePointer(m), Message: fmt.Sprintf("%q is required", m)})
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			out = append(out, Problem{Path: path + "/" + escapePointer(p), Message: fmt.Sprintf("%q is not an allowed property", p)})
		}
	default:
		out = append(out, Problem{Path: path, Message: k.LocalizedString(printer)})
	}
	return out
}

func pointer(tokens []string) string {
	var b bytes.Buffer
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

// sortProblems orders problems by path then message and drops repeats.
func sortProblems(ps []Problem) []Problem {
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
	return slices.Compact(ps)
}

// objectsOver reports whether v, a decoded JSON value, holds more than limit objects; it
// stops counting past limit.
func objectsOver(v any, limit int) bool {
	left := limit
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			if left--; left < 0 {
				return true
			}
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
