package tools

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/gorunner/gorunner/schemas"
)

// Explain adds to each problem what to send instead, read from the input schema: the
// schema of the property at fault, or the allowed properties when the property is not one
// of them. Paths stay as they are.
func Explain(schema json.RawMessage, problems []schemas.Problem) []schemas.Problem {
	out := make([]schemas.Problem, len(problems))
	for i, p := range problems {
		out[i] = p
		if hint := expected(schema, p.Path); hint != "" {
			out[i].Message += "; " + hint
		}
	}
	return out
}

// node is a JSON Schema object as far as Explain reads it.
type node struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Items      json.RawMessage            `json:"items"`
}

// expected says what the schema wants at path: "send <schema>" for a declared property,
// "allowed properties: …" for one that is not declared. Empty when it cannot tell.
func expected(schema json.RawMessage, path string) string {
	if path == "" {
		return ""
	}
	tokens := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := schema
	for i, tok := range tokens {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		var n node
		if json.Unmarshal(cur, &n) != nil {
			return ""
		}
		next, ok := n.Properties[tok]
		if _, err := strconv.Atoi(tok); err == nil && !ok && len(n.Items) > 0 {
			next, ok = n.Items, true
		}
		switch {
		case ok && i == len(tokens)-1:
			return "send " + string(next)
		case ok:
			cur = next
		case i == len(tokens)-1 && len(n.Properties) > 0:
			names := make([]string, 0, len(n.Properties))
			for name := range n.Properties {
				names = append(names, name)
			}
			slices.Sort(names)
			return "allowed properties: " + strings.Join(names, ", ")
		default:
			return ""
		}
	}
	return ""
}
