package schemas

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaPaths bounds how many ways a compiled JSON Schema may apply its subschemas: the
// paths from the root through every applicator (allOf, $ref, properties, items…), a
// reference back to a schema already on the path counting once. The validator follows
// every path for each value it checks and cannot be stopped, so a 1 KB schema of twenty
// "allOf": [{"$ref": next}, {"$ref": next}] levels, a million paths, would take seconds of
// CPU for each input, and thirty levels hours.
const MaxSchemaPaths = 10_000

// errSchemaCost refuses a schema whose validation could take exponential time.
var errSchemaCost = errors.New("the schema")

// edge is one subschema an applicator applies, and where: label is "" for the value the
// schema applies to (allOf, $ref, not, if…), else the step down into it ("p:name" a
// property, "p:*" any property, "i:3" an item, "i:*" any item, "n" property names).
type edge struct {
	to    *jsonschema.Schema
	label string
}

// checkSchemaCost refuses a schema the validator could spend exponential time on: one with
// more than MaxSchemaPaths paths, or one that reaches a schema again along a cycle in two
// ways that can apply to one value (a recursion that doubles at each level the value
// nests), or without stepping into the value at all (a reference cycle, which no value
// passes).
func checkSchemaCost(root *jsonschema.Schema) error {
	c := costWalk{onPath: map[*jsonschema.Schema]bool{}, heads: map[*jsonschema.Schema]bool{}}
	if c.paths(root) > MaxSchemaPaths {
		return fmt.Errorf("%w applies its subschemas along more than %d paths (allOf, anyOf, oneOf, $ref… nested in one another): "+
			"validating an input would take too long; share fewer subschemas", errSchemaCost, MaxSchemaPaths)
	}
	for head := range c.heads {
		if err := cycleCost(head); err != nil {
			return err
		}
	}
	return nil
}

// costWalk counts paths and finds the schemas references lead back to.
type costWalk struct {
	onPath map[*jsonschema.Schema]bool
	heads  map[*jsonschema.Schema]bool
	total  int
}

// paths counts the paths from s, stopping past MaxSchemaPaths in all.
func (c *costWalk) paths(s *jsonschema.Schema) int {
	c.total++
	if c.total > MaxSchemaPaths {
		return c.total
	}
	c.onPath[s] = true
	defer delete(c.onPath, s)
	for _, e := range edgesOf(s) {
		if c.onPath[e.to] {
			c.heads[e.to] = true
			continue
		}
		if c.paths(e.to) > MaxSchemaPaths {
			break
		}
	}
	return c.total
}

// cycleCost follows the paths from head back to head and refuses two whose steps into the
// value can be the same (the recursion then applies head twice to one value, four times a
// level down, and so on), and one that takes no step into the value.
func cycleCost(head *jsonschema.Schema) error {
	var loops [][]string
	onPath := map[*jsonschema.Schema]bool{head: true}
	budget := MaxSchemaPaths
	var walk func(s *jsonschema.Schema, labels []string) error
	walk = func(s *jsonschema.Schema, labels []string) error {
		for _, e := range edgesOf(s) {
			if budget--; budget < 0 {
				return fmt.Errorf("%w refers back to %s along more than %d paths: validating an input would take too long",
					errSchemaCost, where(head), MaxSchemaPaths)
			}
			next := labels
			if e.label != "" {
				next = append(labels[:len(labels):len(labels)], e.label)
			}
			switch {
			case e.to == head:
				if len(next) == 0 {
					return fmt.Errorf("%w refers back to %s without a step into the value (a reference cycle no input can pass)",
						errSchemaCost, where(head))
				}
				for _, other := range loops {
					if overlap(other, next) {
						return fmt.Errorf("%w refers back to %s in two ways that apply to one value, so that each level of "+
							"nesting doubles the work of validating an input; refer back once", errSchemaCost, where(head))
					}
				}
				loops = append(loops, next)
			case !onPath[e.to]:
				onPath[e.to] = true
				err := walk(e.to, next)
				delete(onPath, e.to)
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(head, nil)
}

// overlap reports whether two sequences of steps into a value can reach one value: their
// common length step by step equal, or one of the two steps any property or item.
func overlap(a, b []string) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] && !wildMatch(a[i], b[i]) && !wildMatch(b[i], a[i]) {
			return false
		}
	}
	return true
}

// wildMatch reports whether step w, "p:*" or "i:*", covers step s of the same kind.
func wildMatch(w, s string) bool {
	return len(w) > 2 && len(s) > 2 && w[2:] == "*" && w[:2] == s[:2]
}

// edgesOf lists the subschemas s applies.
func edgesOf(s *jsonschema.Schema) []edge {
	var out []edge
	add := func(to *jsonschema.Schema, label string) {
		if to != nil {
			out = append(out, edge{to, label})
		}
	}
	addAny := func(v any, label string) {
		switch x := v.(type) {
		case *jsonschema.Schema:
			add(x, label)
		case []*jsonschema.Schema:
			for i, sub := range x {
				add(sub, "i:"+strconv.Itoa(i))
			}
		}
	}
	add(s.Ref, "")
	add(s.RecursiveRef, "")
	if s.DynamicRef != nil {
		add(s.DynamicRef.Ref, "")
	}
	add(s.Not, "")
	add(s.If, "")
	add(s.Then, "")
	add(s.Else, "")
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range list {
			add(sub, "")
		}
	}
	for _, sub := range s.DependentSchemas {
		add(sub, "")
	}
	for _, dep := range s.Dependencies {
		addAny(dep, "")
	}
	for name, sub := range s.Properties {
		add(sub, "p:"+name)
	}
	for _, sub := range s.PatternProperties {
		add(sub, "p:*")
	}
	addAny(s.AdditionalProperties, "p:*")
	add(s.UnevaluatedProperties, "p:*")
	add(s.PropertyNames, "n")
	addAny(s.Items, "i:*")
	addAny(s.AdditionalItems, "i:*")
	for i, sub := range s.PrefixItems {
		add(sub, "i:"+strconv.Itoa(i))
	}
	add(s.Items2020, "i:*")
	add(s.Contains, "i:*")
	add(s.UnevaluatedItems, "i:*")
	add(s.ContentSchema, "c")
	return out
}

// where names s by its JSON pointer in the schema ("#" for the root).
func where(s *jsonschema.Schema) string {
	return strings.TrimPrefix(s.Location, schemaURL)
}
