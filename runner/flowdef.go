package runner

import (
	"github.com/gorunner/gorunner/schemas"
)

// flowIndex numbers the steps of a definition with control flow (compound steps,
// compensations, onFailure; see docs/design/control-flow.md) for its templates: the top-level
// steps keep their index, every other step gets a number after them. steps are the steps by
// number; vars, by number, the variables their expressions see besides Env's.
type flowIndex struct {
	node  map[*schemas.Step]int
	steps []*schemas.Step
	vars  [][]string
	// children holds, by foreach step with a workflow, the one-step list its iterations
	// run; iterations, that list's step (foreachchild.go).
	children   map[*schemas.Step][]schemas.Step
	iterations map[*schemas.Step]bool
}

// hasFlow reports whether d uses control flow: without it a run is the straight line.
func hasFlow(d *schemas.Definition) bool {
	if len(d.OnFailure) > 0 {
		return true
	}
	for i := range d.Steps {
		if d.Steps[i].Compound() || d.Steps[i].Compensate != nil {
			return true
		}
	}
	return false
}

func newFlowIndex(d *schemas.Definition) *flowIndex {
	f := &flowIndex{node: map[*schemas.Step]int{}, children: map[*schemas.Step][]schemas.Step{}, iterations: map[*schemas.Step]bool{}}
	var walk func(st *schemas.Step, vars []string)
	add := func(st *schemas.Step, vars []string) {
		f.node[st] = len(f.steps)
		f.steps, f.vars = append(f.steps, st), append(f.vars, vars)
	}
	number := func(st *schemas.Step, vars []string) {
		add(st, vars)
		walk(st, vars)
	}
	for i := range d.Steps {
		add(&d.Steps[i], nil)
	}
	walk = func(st *schemas.Step, vars []string) {
		if st.Compensate != nil {
			number(st.Compensate, vars)
		}
		inner := innerVars(st, vars)
		for _, l := range st.Lists() {
			for j := range l.Steps {
				number(&l.Steps[j], inner)
			}
		}
		f.addChildList(st, inner)
	}
	for i := range d.Steps {
		walk(&d.Steps[i], nil)
	}
	for i := range d.OnFailure {
		number(&d.OnFailure[i], nil)
	}
	return f
}

// innerVars are the variables the steps held by st see: vars, and a foreach's item and
// index or a loop's iteration.
func innerVars(st *schemas.Step, vars []string) []string {
	switch {
	case st.Foreach != nil:
		return append(vars[:len(vars):len(vars)], st.Foreach.ItemName(), schemas.IndexVar)
	case st.Loop != nil:
		return append(vars[:len(vars):len(vars)], schemas.IterationVar)
	}
	return vars
}

// templateVars are the variables the template key names sees: its step's, and for the
// parts evaluated inside the step (a loop's until, a foreach's workflow input) the ones
// its lists see.
func (c *compiled) templateVars(key templateKey) []string {
	f := c.flowIndex()
	if f == nil || key.step < 0 {
		return nil
	}
	vars := f.vars[key.step]
	if key.part == partUntil || key.part == partChildInput {
		return innerVars(f.steps[key.step], vars)
	}
	return vars
}

// Template parts of compound steps (templateKey.part).
const (
	partItems      = "items"
	partUntil      = "until"
	partChildInput = "foreach.workflow"
)

// flowIndex is c's flowIndex, nil for a definition without control flow.
func (c *compiled) flowIndex() *flowIndex {
	c.flowOnce.Do(func() {
		if hasFlow(c.def) {
			c.flow = newFlowIndex(c.def)
		}
	})
	return c.flow
}

// effects reports whether running st, or its compensation, has effects under t: an
// unknown kind is taken to; a compound step has those of the steps it holds (a foreach with
// a workflow starts child runs).
func (t kindTable) effects(st *schemas.Step) bool {
	if st.Compensate != nil && t.effects(st.Compensate) {
		return true
	}
	if !st.Compound() {
		k, _ := t.of(st)
		return k == nil || k.Effects
	}
	if st.Foreach != nil && st.Foreach.Workflow != nil {
		return true
	}
	for _, l := range st.Lists() {
		for j := range l.Steps {
			if t.effects(&l.Steps[j]) {
				return true
			}
		}
	}
	return false
}
