package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
)

// ask is a hook's question as a form.
type ask struct {
	Message string
	Fields  []askField
}

// askField is one input of an ask form, from one property of the ask's object schema.
type askField struct {
	Name        string
	Type        string // string, number, integer or boolean
	Title       string
	Description string
	Enum        []string
	Required    bool
	// Value is what the person typed, and Problem what was wrong with it, when the form
	// comes back with a problem (the run form).
	Value   string
	Problem string
	// Form prefixes the field's element id, so that two forms on a page (a hook form per
	// waiting hook) never share one.
	Form string
}

// waitingAsk is the ask of the hook run waits on, as the run holds it (its message
// evaluated once, the one MCP shows too), or nil (then the generic form).
func waitingAsk(run *runner.Run) *ask {
	if run.WaitingOn == nil || run.WaitingOn.Ask == nil {
		return nil
	}
	a := run.WaitingOn.Ask
	return &ask{Message: a.Message, Fields: askFields(a.Schema)}
}

// askFields turns an object schema's scalar properties into form fields, sorted by name.
func askFields(schema json.RawMessage) []askField {
	var s struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	var out []askField
	for name, p := range s.Properties {
		f := askField{Name: name, Type: p.Type, Title: p.Title, Description: p.Description,
			Required: slices.Contains(s.Required, name)}
		switch f.Type {
		case "number", "integer", "boolean":
		case "object", "array":
			f.Type = "json"
		default:
			f.Type = "string"
		}
		for _, e := range p.Enum {
			f.Enum = append(f.Enum, fmt.Sprint(e))
		}
		if f.Title == "" {
			f.Title = name
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b askField) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// fieldValue reads one posted ask field as its type; an empty optional field is left out.
func fieldValue(typ, v string) (any, error) {
	if v == "" && typ != "string" {
		return nil, nil
	}
	switch typ {
	case "boolean":
		return v == "on" || v == "true", nil
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", v)
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", v)
		}
		return n, nil
	case "json":
		var x any
		if err := json.Unmarshal([]byte(v), &x); err != nil {
			return nil, errors.New("this is not valid JSON")
		}
		return x, nil
	}
	return v, nil
}

// invalid is a validation problem at a JSON pointer of what the person sent.
func invalid(path, msg string) error {
	return &schemas.ValidationError{Problems: []schemas.Problem{{Path: path, Message: msg}}}
}
