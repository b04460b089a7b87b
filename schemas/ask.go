package schemas

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// HookAsk makes a hook step ask the person through the MCP client (elicitation): Message
// is shown to them (a template string), Schema is what they fill in. MCP elicitation
// allows only a flat object of primitive properties, so that is all Schema may be.
type HookAsk struct {
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema"`
}

// askKeywords are the keywords an ask schema may use, at the top and per property type:
// those of MCP's elicitation requestedSchema.
var askKeywords = map[string][]string{
	"":        {"type", "properties", "required", "title", "description", "$schema"},
	"string":  {"type", "title", "description", "format", "enum", "enumNames", "minLength", "maxLength", "default"},
	"number":  {"type", "title", "description", "minimum", "maximum", "default"},
	"integer": {"type", "title", "description", "minimum", "maximum", "default"},
	"boolean": {"type", "title", "description", "default"},
}

// askFormats are the string formats MCP elicitation allows.
var askFormats = []string{"email", "uri", "date", "date-time"}

// ask checks a hook's ask: a message and a schema MCP elicitation can send.
func (v *validator) ask(p string, a *HookAsk, i int) {
	v.required(p+"/message", a.Message, i)
	if len(a.Schema) == 0 || isNull(a.Schema) {
		v.add(p+"/schema", "schema is required: an object of string, number, integer or boolean properties")
		return
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(a.Schema, &top) != nil || top == nil {
		v.add(p+"/schema", "schema must be a JSON object")
		return
	}
	v.keywords(p+"/schema", top, "")
	if string(top["type"]) != `"object"` {
		v.add(p+"/schema/type", "the ask schema must have type: object")
	}
	var props map[string]map[string]json.RawMessage
	if err := json.Unmarshal(top["properties"], &props); err != nil || len(props) == 0 {
		v.add(p+"/schema/properties", "properties must be an object of at least one property, each itself a schema object")
		return
	}
	for _, name := range sortedKeys(props) {
		v.askProperty(fmt.Sprintf("%s/schema/properties/%s", p, pointerEscape(name)), props[name])
	}
	v.schema(p+"/schema", a.Schema)
	v.schemaTexts(p+"/schema", a.Schema) // shown to the person, as tool texts to the agent
}

// askProperty checks one property of an ask schema: a primitive type and its keywords.
func (v *validator) askProperty(p string, prop map[string]json.RawMessage) {
	var typ string
	if json.Unmarshal(prop["type"], &typ) != nil || typ == "" || typ == "object" || askKeywords[typ] == nil {
		v.add(p+"/type", "an ask property must have type string, number, integer or boolean (elicitation allows no nesting)")
		return
	}
	v.keywords(p, prop, typ)
	if raw, ok := prop["format"]; ok {
		var f string
		if json.Unmarshal(raw, &f) != nil || !slices.Contains(askFormats, f) {
			v.add(p+"/format", "format must be one of %v", askFormats)
		}
	}
}

// keywords reports each keyword of schema that MCP elicitation does not allow for typ.
func (v *validator) keywords(p string, schema map[string]json.RawMessage, typ string) {
	for _, k := range sortedKeys(schema) {
		if !slices.Contains(askKeywords[typ], k) {
			v.add(p+"/"+pointerEscape(k), "%q is not allowed in an ask schema (MCP elicitation allows %v)", k, askKeywords[typ])
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pointerEscape escapes a name for a JSON pointer segment (RFC 6901).
func pointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
