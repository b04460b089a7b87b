package schemas

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Building the subschema graph checkSchemaCost counts over: a node per subschema, its
// steps into the value (properties, items) and the schemas it applies in place.

// node returns s's node, making it and the nodes of all s applies the first time.
func (g *costGraph) node(s *jsonschema.Schema) *costNode {
	if s == nil {
		return nil
	}
	if n, ok := g.nodes[s]; ok {
		return n
	}
	n := &costNode{s: s}
	g.nodes[s] = n
	g.order = append(g.order, n)
	if s.Ref != nil && s.DraftVersion < 2019 {
		// Before 2019-09, the validator applies $ref alone, ignoring the keywords beside it.
		n.inPlace = []*costNode{g.node(s.Ref)}
		return n
	}
	g.link(n)
	return n
}

// link fills in what n's schema applies.
func (g *costGraph) link(n *costNode) {
	s := n.s
	for _, sub := range []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If} {
		n.addInPlace(g.node(sub))
	}
	if s.RecursiveRef != nil && s.RecursiveRef.RecursiveAnchor && s.RecursiveRef.Location != schemaURL+"#" && g.err == nil {
		g.err = fmt.Errorf("%w has a $recursiveRef to %s, whose $recursiveAnchor the validator may resolve "+
			"to other schemas than the check can count; put $recursiveAnchor at the root only", errSchemaCost, where(s.RecursiveRef))
	}
	if d := s.DynamicRef; d != nil {
		targets := []*jsonschema.Schema{d.Ref}
		if d.Anchor != "" && d.Ref.DynamicAnchor == d.Anchor {
			targets = g.anchors[d.Anchor]
		}
		n.addChoice(g, targets...)
	}
	n.addChoice(g, s.Then, s.Else)
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range list {
			n.addInPlace(g.node(sub))
		}
	}
	for _, sub := range s.DependentSchemas {
		n.addInPlace(g.node(sub))
	}
	for _, dep := range s.Dependencies {
		if sub, ok := dep.(*jsonschema.Schema); ok {
			n.addInPlace(g.node(sub))
		}
	}
	props := &n.steps[kindProperty]
	for name, sub := range s.Properties {
		props.name(name, g.node(sub))
	}
	for _, sub := range s.PatternProperties {
		props.addAll(g.node(sub))
	}
	if sub, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		props.rest = g.node(sub)
	}
	props.uneval = g.node(s.UnevaluatedProperties)
	g.linkItems(n)
	n.steps[kindName].addAll(g.node(s.PropertyNames))
	n.steps[kindContent].addAll(g.node(s.ContentSchema))
}

// linkItems fills in what n's schema applies to its items.
func (g *costGraph) linkItems(n *costNode) {
	s, items := n.s, &n.steps[kindItem]
	switch x := s.Items.(type) {
	case *jsonschema.Schema:
		items.rest = g.node(x)
	case []*jsonschema.Schema:
		for i, sub := range x {
			items.name(strconv.Itoa(i), g.node(sub))
		}
	}
	if sub, ok := s.AdditionalItems.(*jsonschema.Schema); ok && items.rest == nil {
		items.rest = g.node(sub)
	}
	for i, sub := range s.PrefixItems {
		items.name(strconv.Itoa(i), g.node(sub))
	}
	if s.Items2020 != nil {
		items.rest = g.node(s.Items2020)
	}
	items.addAll(g.node(s.Contains))
	items.uneval = g.node(s.UnevaluatedItems)
}

func (n *costNode) addInPlace(to *costNode) {
	if to != nil {
		n.inPlace = append(n.inPlace, to)
	}
}

// addChoice adds the schemas of subs, of which the validator applies one at most.
func (n *costNode) addChoice(g *costGraph, subs ...*jsonschema.Schema) {
	var choice []*costNode
	for _, sub := range subs {
		if to := g.node(sub); to != nil {
			choice = append(choice, to)
		}
	}
	if len(choice) > 0 {
		n.choices = append(n.choices, choice)
	}
}

func (st *stepsOf) addAll(to *costNode) {
	if to != nil {
		st.all = append(st.all, to)
	}
}

func (st *stepsOf) name(name string, to *costNode) {
	st.named = append(st.named, namedStep{name, to})
}

// successors calls f with each node n's closure applies inside n's value, or with its
// stepper alone.
func (n *costNode) successors(f func(*costNode)) {
	if n.stepper != nil {
		f(n.stepper.n)
		return
	}
	for _, c := range n.closure {
		for kind := range kinds {
			st := &c.n.steps[kind]
			for _, to := range st.all {
				f(to)
			}
			if other := st.other(); other != nil {
				f(other)
			}
			for _, ns := range st.named {
				f(ns.to)
			}
		}
	}
}

// other is what st applies to the values it does not name.
func (st *stepsOf) other() *costNode {
	if st.rest != nil {
		return st.rest
	}
	return st.uneval
}

// dynamicAnchors finds the schemas of each $dynamicAnchor name in doc, wherever in it the
// validator may look one up, compiled by c (the same schemas it compiled). Every object of
// doc with a $dynamicAnchor is taken, even one that is not a schema: counting it too only
// counts more.
func dynamicAnchors(c *jsonschema.Compiler, doc any) (map[string][]*jsonschema.Schema, error) {
	out := map[string][]*jsonschema.Schema{}
	var walk func(v any, ptr string) error
	walk = func(v any, ptr string) error {
		switch v := v.(type) {
		case map[string]any:
			if name, ok := v["$dynamicAnchor"].(string); ok {
				s, err := c.Compile(schemaURL + "#" + ptr)
				if err != nil {
					return fmt.Errorf("%w has a $dynamicAnchor at %s the check cannot follow: %w", errSchemaCost, ptr, err)
				}
				out[name] = append(out[name], s)
			}
			for k, sub := range v {
				if err := walk(sub, ptr+"/"+url.PathEscape(escapePointer(k))); err != nil {
					return err
				}
			}
		case []any:
			for i, sub := range v {
				if err := walk(sub, ptr+"/"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(doc, "")
}

// where names s by its JSON pointer in the schema ("#" for the root).
func where(s *jsonschema.Schema) string {
	return strings.TrimPrefix(s.Location, schemaURL)
}
