package schemas

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaApplications bounds how many times validation may apply subschemas to one
// value: allOf, anyOf, oneOf, $ref, not, if/then/else… apply theirs to the value their
// schema applies to, so that nesting them multiplies the work at that value, and at the
// values inside it. A 1 KB schema of twenty "allOf": [{"$ref": next}, {"$ref": next}]
// levels applies a million schemas to each input; it took seconds of CPU a call, and
// thirty levels hours. Properties and items apply theirs to other values, so that a wide
// schema costs only as much as its input is large.
const MaxSchemaApplications = 1000

// MaxSchemaPaths bounds the paths cycleCost follows from the subschemas referred back to
// (recursions) back to them, all of one schema's together: each follows the paths through
// all it reaches, so that a budget each would let a schema of many recursions through one
// hub cost their number times this.
const MaxSchemaPaths = 10_000

// errSchemaCost refuses a schema whose validation could take exponential time.
var errSchemaCost = errors.New("the schema")

// edge is one subschema an applicator applies, and where: label is "" for the value the
// schema applies to (allOf, $ref, not, if…), else the step down into it ("p:name" a
// property, "p:*" any property, "i:3" an item, "i:*" any item, "n" property names, "c"
// the decoded content).
type edge struct {
	to    *jsonschema.Schema
	label string
}

// checkSchemaCost refuses a schema the validator could spend exponential time on: one that
// applies more than MaxSchemaApplications subschemas to some value, or one that reaches a
// schema again along a cycle in two ways that can apply to one value (a recursion that
// doubles at each level the value nests), or without stepping into the value at all (a
// reference cycle, which no value passes).
func checkSchemaCost(root *jsonschema.Schema) error {
	c := costWalk{worst: map[*jsonschema.Schema]int{}, active: map[*jsonschema.Schema]bool{}, heads: map[*jsonschema.Schema]bool{}}
	if c.applications(root) > MaxSchemaApplications {
		return fmt.Errorf("%w applies more than %d subschemas to one value (allOf, anyOf, oneOf, $ref… nested in one another): "+
			"validating an input would take too long; share fewer subschemas", errSchemaCost, MaxSchemaApplications)
	}
	budget := MaxSchemaPaths
	for head := range c.heads {
		if err := cycleCost(head, &budget); err != nil {
			return err
		}
	}
	return nil
}

// costWalk bounds the subschemas applied to one value and finds the schemas references
// lead back to.
type costWalk struct {
	worst  map[*jsonschema.Schema]int  // applications of each schema done, capped
	active map[*jsonschema.Schema]bool // the schemas being looked at: one met again is a head
	heads  map[*jsonschema.Schema]bool
}

// capped is n, or MaxSchemaApplications+1 past it, so that sums and products stay small.
func capped(n int) int { return min(n, MaxSchemaApplications+1) }

// applications is the most subschemas s applied once applies to any one value, at the
// value s applies to or inside it, capped (see capped). At that value it is the schemas
// applied in place, each as often as the ways to it (here). At a value one step inside,
// it is at most the sum, over those schemas' edges that can take that step, of the most
// their subschemas apply: a named property's edges and the edges of any property, or of
// any item. A schema met again along the way (a recursion) counts once there:
// cycleCost bounds recursions.
func (c *costWalk) applications(s *jsonschema.Schema) int {
	if n, ok := c.worst[s]; ok {
		return n
	}
	if c.active[s] {
		c.heads[s] = true
		return 1
	}
	c.active[s] = true
	defer delete(c.active, s)
	here := map[*jsonschema.Schema]int{}
	most := c.inPlace(s, 1, here)
	named, wild := map[string]int{}, map[string]int{}
	for t, ways := range here {
		for _, e := range edgesOf(t) {
			if e.label == "" {
				continue
			}
			n := capped(ways * c.applications(e.to))
			if kind, rest, _ := strings.Cut(e.label, ":"); rest == "*" {
				wild[kind] = capped(wild[kind] + n)
			} else {
				named[e.label] = capped(named[e.label] + n)
			}
		}
	}
	for _, n := range wild {
		most = max(most, n)
	}
	for label, n := range named {
		kind, _, _ := strings.Cut(label, ":")
		most = max(most, capped(n+wild[kind]))
	}
	c.worst[s] = most
	return most
}

// inPlace adds s, applied in ways ways, and the schemas it applies in place (allOf, $ref…)
// to here, each with its ways, and returns how many applications that makes, capped: the
// walk stops once past MaxSchemaApplications, so that a fan-out costs no more than that.
// A schema met again in place (a reference cycle) is a head: cycleCost refuses it.
func (c *costWalk) inPlace(s *jsonschema.Schema, ways int, here map[*jsonschema.Schema]int) int {
	here[s] = capped(here[s] + ways)
	total := ways
	onPath := c.active[s]
	c.active[s] = true
	defer func() {
		if !onPath {
			delete(c.active, s)
		}
	}()
	for _, e := range edgesOf(s) {
		if e.label != "" {
			continue
		}
		if c.active[e.to] {
			c.heads[e.to] = true
			continue
		}
		if total = capped(total + c.inPlace(e.to, ways, here)); total > MaxSchemaApplications {
			break
		}
	}
	return total
}

// cycleCost follows the paths from head back to head and refuses two whose steps into the
// value can be the same (the recursion then applies head twice to one value, four times a
// level down, and so on), and one that takes no step into the value. Each edge it follows
// spends one of budget, shared with the other heads.
func cycleCost(head *jsonschema.Schema, budget *int) error {
	var loops [][]string
	onPath := map[*jsonschema.Schema]bool{head: true}
	var walk func(s *jsonschema.Schema, labels []string) error
	walk = func(s *jsonschema.Schema, labels []string) error {
		for _, e := range edgesOf(s) {
			if *budget--; *budget < 0 {
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
