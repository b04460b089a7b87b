package schemas

import (
	"errors"
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaApplications bounds how many times validation may apply subschemas to one
// value: allOf, anyOf, oneOf, $ref, not, if/then/else… apply theirs to the value their
// schema applies to, so that nesting them multiplies the work at that value, and at the
// values inside it. A 1 KB schema of twenty "allOf": [{"$ref": next}, {"$ref": next}]
// levels applies a million schemas to each input; it took seconds of CPU a call, and
// thirty levels hours. Properties and items apply theirs to other values, so that a wide
// schema costs only as much as its input is large. A recursion counts at every depth an
// input can nest to: one that applies a subschema twice to one value, or more often the
// deeper the value, passes the bound at some depth and is refused.
const MaxSchemaApplications = 1000

// maxCostWork bounds the closure entries the check merges and the values it works out
// profiles for, about a million a second: many times what largeSchema(1000) in the tests
// (355 KB) needs, so that a schema made to keep the check busy (many references to one that
// applies hundreds in place, many schemas that apply in place others naming many
// properties) is refused within a second or so, and its memory stays bounded.
const maxCostWork = 1_000_000

// errSchemaCost refuses a schema whose validation could take exponential time.
var errSchemaCost = errors.New("the schema")

// errTooIntricate refuses a schema that would keep the check busy past maxCostWork.
var errTooIntricate = fmt.Errorf("%w is too intricate for the check of its cost (schemas that apply many "+
	"others in place, or name many properties, applied under many others); share fewer subschemas", errSchemaCost)

// checkSchemaCost refuses a schema the validator could spend exponential time on: one that
// applies more than MaxSchemaApplications subschemas to some value, at any depth the input
// nests to, or one that reaches a schema again without stepping into the value (a
// reference cycle, which no value passes). It takes time about linear in the schema's size.
//
// A $dynamicRef applies one of the schemas with its $dynamicAnchor, whichever the dynamic
// scope picks, so it is counted as the costliest of all of doc's; c compiles them.
func checkSchemaCost(c *jsonschema.Compiler, doc any, root *jsonschema.Schema) error {
	g := costGraph{nodes: map[*jsonschema.Schema]*costNode{}}
	anchors, err := dynamicAnchors(c, doc)
	if err != nil {
		return err
	}
	g.anchors = anchors
	start := g.node(root)
	if g.err != nil {
		return g.err
	}
	for _, n := range g.order {
		if _, err := g.closure(n); err != nil {
			return err
		}
	}
	return g.components(start)
}

// costGraph is a schema's subschemas and what each applies, and where.
type costGraph struct {
	nodes map[*jsonschema.Schema]*costNode
	order []*costNode // every node, in the order first met
	// anchors are the schemas of each $dynamicAnchor name.
	anchors map[string][]*jsonschema.Schema
	err     error // a $recursiveRef the check cannot follow
	work    int   // the closure entries merged and profile values worked out, bounded by maxCostWork
	// Tarjan's walk: its stack, its counter, and how many components it closed.
	stack       []*costNode
	index, sccs int
}

// costNode is one subschema: what it applies to the value it applies to (inPlace, and one
// of each of choices: then or else, the targets a $dynamicRef may resolve to), what it
// applies to the values inside (steps), and what the check worked out about it.
type costNode struct {
	s          *jsonschema.Schema
	inPlace    []*costNode
	choices    [][]*costNode
	steps      allSteps
	closure    []weighted // the schemas applied in place, s first, each with its ways
	total      int        // their ways together, capped
	deep       int        // the most subschemas applied to one value inside s's, capped
	index, low int        // Tarjan's
	scc        int        // the component it is in, once closed; 0 before
	onStack    bool
	closing    bool // its closure is being worked out: met again, it is a reference cycle
	queued     bool
	// stepper is the one schema of its closure that applies anything inside its value,
	// when there is one and it is not s itself, with its ways: s's deep follows from its.
	stepper    *weighted
	dependents []*costNode // the nodes of its component that apply it inside their value
}

// Kinds of steps into a value.
const (
	kindProperty = iota // a property's value
	kindItem            // an item
	kindName            // a property's name (propertyNames)
	kindContent         // the decoded content (contentSchema)
	kinds
)

// stepsOf is what one schema applies to the values of one kind inside its value, split by
// which values: named (properties, prefixItems) to the value of that name only, all
// (patternProperties, contains, propertyNames…) maybe to any, rest (additionalProperties,
// items after prefixItems) to those it does not name, uneval (unevaluatedProperties and
// Items) to those it does not name either when it has no rest.
type stepsOf struct {
	named  []namedStep
	all    []*costNode
	rest   *costNode
	uneval *costNode
}

// allSteps is what a schema applies inside its value, by kind.
type allSteps [kinds]stepsOf

// any reports whether there is anything.
func (a *allSteps) any() bool {
	for _, st := range a {
		if len(st.named)+len(st.all) > 0 || st.other() != nil {
			return true
		}
	}
	return false
}

// namedStep is what a schema applies to the value of one name inside its value.
type namedStep struct {
	name string
	to   *costNode
}

// weighted is a node applied in ways ways.
type weighted struct {
	n    *costNode
	ways int
}

// label is a named value inside a value: a property or an item.
type label struct {
	kind int
	name string
}

// capped is n, or MaxSchemaApplications+1 past it, so that sums and products stay small.
func capped(n int) int { return min(n, MaxSchemaApplications+1) }

// closure works out the schemas n applies in place, each with the ways it is applied,
// what one of a choice applies counted as the most of them for each, and their total,
// the applications of a choice counted as the most of its schemas' (the validator applies
// if, then then or else; a $dynamicRef, one of its targets). It refuses more than
// MaxSchemaApplications in all, or a reference cycle.
func (g *costGraph) closure(n *costNode) ([]weighted, error) {
	if n.closure != nil {
		return n.closure, nil
	}
	if n.closing {
		return nil, fmt.Errorf("%w refers back to %s without a step into the value (a reference cycle no input can pass)",
			errSchemaCost, where(n.s))
	}
	n.closing = true
	defer func() { n.closing = false }()
	total := 1
	for _, sub := range n.inPlace {
		if _, err := g.closure(sub); err != nil {
			return nil, err
		}
		total = capped(total + sub.total)
	}
	for _, choice := range n.choices {
		most := 0
		for _, b := range choice {
			if _, err := g.closure(b); err != nil {
				return nil, err
			}
			most = max(most, b.total)
		}
		total = capped(total + most)
	}
	if total > MaxSchemaApplications {
		return nil, fmt.Errorf("%w applies more than %d subschemas to one value (allOf, anyOf, oneOf, $ref… nested in one another): "+
			"validating an input would take too long; share fewer subschemas", errSchemaCost, MaxSchemaApplications)
	}
	for _, sub := range n.inPlace {
		g.work += len(sub.closure)
	}
	for _, choice := range n.choices {
		for _, b := range choice {
			g.work += len(b.closure)
		}
	}
	if g.work > maxCostWork {
		return nil, errTooIntricate
	}
	n.closure, n.total = mergeClosures(n), total
	n.stepper = soleStepper(n)
	return n.closure, nil
}

// soleStepper is the one schema of n's closure, other than n, that applies anything
// inside the value, if it is the only one: a schema that only refers to another, or only
// adds in-place keywords to it, then costs no more to look at than a reference.
func soleStepper(n *costNode) *weighted {
	var sole *weighted
	for i, c := range n.closure {
		if !c.n.steps.any() {
			continue
		}
		if sole != nil || c.n == n {
			return nil
		}
		sole = &n.closure[i]
	}
	return sole
}

// mergeClosures is n's closure from those of the schemas it applies in place, all of
// all of inPlace's and, for each choice, the most of its schemas' for each schema.
func mergeClosures(n *costNode) []weighted {
	if len(n.inPlace)+len(n.choices) == 0 {
		return []weighted{{n, 1}}
	}
	ways := map[*costNode]int{n: 1}
	for _, sub := range n.inPlace {
		for _, w := range sub.closure {
			ways[w.n] = capped(ways[w.n] + w.ways)
		}
	}
	for _, choice := range n.choices {
		most := map[*costNode]int{}
		for _, b := range choice {
			for _, w := range b.closure {
				most[w.n] = max(most[w.n], w.ways)
			}
		}
		for m, w := range most {
			ways[m] = capped(ways[m] + w)
		}
	}
	out := make([]weighted, 0, len(ways))
	for m, w := range ways {
		out = append(out, weighted{m, w})
	}
	return out
}

// components walks the graph by Tarjan's algorithm and works out deep for the nodes of each
// strongly connected component as it closes, the components they lead to being done.
func (g *costGraph) components(n *costNode) error {
	g.index++
	n.index, n.low = g.index, g.index
	g.stack = append(g.stack, n)
	n.onStack = true
	var err error
	n.successors(func(m *costNode) {
		switch {
		case err != nil:
		case m.index == 0:
			err = g.components(m)
			n.low = min(n.low, m.low)
		case m.onStack:
			n.low = min(n.low, m.index)
		}
	})
	if err != nil || n.low != n.index {
		return err
	}
	g.sccs++
	var members []*costNode
	for {
		m := g.stack[len(g.stack)-1]
		g.stack = g.stack[:len(g.stack)-1]
		m.onStack, m.scc = false, g.sccs
		members = append(members, m)
		if m == n {
			break
		}
	}
	return g.settle(members)
}

// settle works out deep for the members of one component: the least values that agree
// with deepNow, found by raising them from 0 until none rises. In a recursion that
// applies a subschema more often the deeper the value, they rise without end: past
// MaxSchemaApplications, the schema is refused.
func (g *costGraph) settle(members []*costNode) error {
	for _, m := range members {
		m.deep, m.queued = 0, true
		m.successors(func(to *costNode) {
			if to.scc == m.scc {
				to.dependents = append(to.dependents, m)
			}
		})
	}
	queue := slices.Clone(members)
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		m.queued = false
		n := m.deepNow(&g.work)
		if g.work > maxCostWork {
			return errTooIntricate
		}
		if n <= m.deep {
			continue
		}
		if m.deep = n; n > MaxSchemaApplications {
			return g.tooMany(m, len(m.dependents) > 0)
		}
		for _, d := range m.dependents {
			if !d.queued {
				d.queued = true
				queue = append(queue, d)
			}
		}
	}
	return nil
}

// tooMany refuses m, which applies more than MaxSchemaApplications subschemas to some
// value inside its own, within a recursion or not.
func (g *costGraph) tooMany(m *costNode, recursive bool) error {
	if recursive {
		return fmt.Errorf("%w refers back to %s in two ways that apply to one value, so that each level of "+
			"nesting adds to the work of validating an input; refer back once", errSchemaCost, where(m.s))
	}
	return fmt.Errorf("%w applies more than %d subschemas to one value (allOf, anyOf, oneOf, $ref… nested in one another): "+
		"validating an input would take too long; share fewer subschemas", errSchemaCost, MaxSchemaApplications)
}

// deepNow is the most subschemas m applies to one value inside its own, from what the
// nodes its closure applies inside apply: m's profile, each value inside getting the sum
// of what the schemas there apply to it (their totals) and, apart, of what they apply
// inside it (their deeps). Summing deeps that schemas reach at different depths counts
// more than validation applies, never less.
// It adds to work the values of the profiles it works out.
func (m *costNode) deepNow(work *int) int {
	if m.stepper != nil {
		return capped(m.stepper.ways * m.stepper.n.deep)
	}
	p := m.profile(nil, work)
	most := 0
	for _, r := range p.wild {
		most = max(most, r.now, r.deep)
	}
	for _, r := range p.named {
		most = max(most, r.now, r.deep)
	}
	return capped(most)
}

// reach is what applies to one value: the applications at it, and the most inside it.
type reach struct{ now, deep int }

func (r reach) plus(o reach) reach { return reach{r.now + o.now, r.deep + o.deep}.capped() }

func (r reach) capped() reach { return reach{capped(r.now), capped(r.deep)} }

func (r reach) most(o reach) reach { return reach{max(r.now, o.now), max(r.deep, o.deep)} }

// reach is what n applies at its value and inside it; nothing for no node.
func (n *costNode) reach() reach {
	if n == nil {
		return reach{}
	}
	return reach{n.total, n.deep}
}

// profile is what a schema and those it applies in place apply to the values inside its
// value: to each one named, and to any other of each kind.
type profile struct {
	wild  [kinds]reach
	named map[label]reach
}

// at is what p applies to the value l.
func (p profile) at(l label) reach {
	if r, ok := p.named[l]; ok {
		return r
	}
	return p.wild[l.kind]
}

// profile works out n's profile, memoised in done (made when nil): its own keywords',
// plus the profiles of what it applies in place, and for each choice the most of its
// schemas' at each value (the validator applies one of then and else, one target of a
// $dynamicRef). What another schema in place names, n's unevaluatedProperties is still
// counted at: the validator applies it there when that schema fails.
func (n *costNode) profile(done map[*costNode]profile, work *int) profile {
	if len(n.inPlace)+len(n.choices) == 0 {
		p := n.ownProfile()
		*work += len(p.named)
		return p
	}
	if p, ok := done[n]; ok {
		return p
	}
	if done == nil {
		done = map[*costNode]profile{}
	}
	var buf [4]profile // most schemas apply few in place: no allocation for them
	parts := append(buf[:0], n.ownProfile())
	for _, sub := range n.inPlace {
		parts = append(parts, sub.profile(done, work))
	}
	for _, choice := range n.choices {
		var buf [2]profile
		branches := buf[:0]
		for _, b := range choice {
			branches = append(branches, b.profile(done, work))
		}
		parts = append(parts, eitherOf(branches))
	}
	p := sum(parts)
	for _, part := range parts {
		*work += len(part.named)
	}
	done[n] = p
	return p
}

// ownProfile is what n's own keywords apply inside its value: to any value of a kind, all
// and other (see stepsOf); to a named one, what names it and all, without the other.
func (n *costNode) ownProfile() profile {
	var p profile
	for kind := range kinds {
		st := &n.steps[kind]
		var all reach
		for _, to := range st.all {
			all = all.plus(to.reach())
		}
		p.wild[kind] = all.plus(st.other().reach())
		for _, ns := range st.named {
			if p.named == nil {
				p.named = make(map[label]reach, len(st.named))
			}
			l := label{kind, ns.name}
			r, ok := p.named[l]
			if !ok {
				r = all
			}
			p.named[l] = r.plus(ns.to.reach())
		}
	}
	return p
}

// sum is the profile of parts applied together: at each value, the sum of what they
// apply to it, worked out from the differences of each part's named values to its others
// so that it takes time linear in the values they name.
func sum(parts []profile) profile {
	parts = slices.DeleteFunc(parts, profile.empty)
	if len(parts) == 1 {
		return parts[0]
	}
	var wild [kinds]reach // not capped until the end, for the differences to be exact
	for _, p := range parts {
		for kind, r := range p.wild {
			wild[kind] = reach{wild[kind].now + r.now, wild[kind].deep + r.deep}
		}
	}
	var out profile
	for _, p := range parts {
		for l, r := range p.named {
			if out.named == nil {
				out.named = make(map[label]reach, len(p.named))
			}
			at, ok := out.named[l]
			if !ok {
				at = wild[l.kind]
			}
			other := p.wild[l.kind]
			out.named[l] = reach{at.now + r.now - other.now, at.deep + r.deep - other.deep}
		}
	}
	for l, r := range out.named {
		out.named[l] = r.capped()
	}
	for kind, r := range wild {
		out.wild[kind] = r.capped()
	}
	return out
}

// eitherOf is the profile of one of branches applied: at each value, the most of what they
// apply to it.
func eitherOf(branches []profile) profile {
	out := profile{}
	for _, p := range branches {
		for kind, r := range p.wild {
			out.wild[kind] = out.wild[kind].most(r)
		}
		for l := range p.named {
			if _, ok := out.named[l]; ok {
				continue
			}
			if out.named == nil {
				out.named = map[label]reach{}
			}
			var at reach
			for _, q := range branches {
				at = at.most(q.at(l))
			}
			out.named[l] = at
		}
	}
	return out
}

// empty reports whether p applies nothing.
func (p profile) empty() bool {
	return len(p.named) == 0 && p.wild == [kinds]reach{}
}
