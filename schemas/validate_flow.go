package schemas

import (
	"fmt"
	"github.com/gorunner/gorunner/internal/names"
	"regexp"
	"slices"
	"strings"
)

// frame is the scope of one step list being validated: the ids of its steps, the position
// reached in it (at, while a list inside it is validated) and the variables its
// expressions see besides Env's (a foreach's item and index, a loop's iteration).
type frame struct {
	ids  map[string]int
	at   int
	vars []string
}

// vars are the variables the list being validated sees: its own and its enclosing lists'.
func (v *validator) vars() []string {
	var names []string
	for _, f := range v.frames {
		names = append(names, f.vars...)
	}
	return names
}

// ref checks that an expression at path, in the step at position step of the innermost
// list, reads a step that has finished when it runs: an earlier step of its own list, else
// (outward) of an enclosing list, before the compound step that holds it.
func (v *validator) ref(path, ref string, step int) {
	for n := len(v.frames) - 1; n >= 0; n-- {
		f := v.frames[n]
		at, ok := f.ids[ref]
		if !ok {
			continue
		}
		if n < len(v.frames)-1 {
			step = f.at
		}
		if at >= step {
			v.add(path, "expression reads steps.%s, which does not run before this step; only earlier steps can be read", ref)
		}
		return
	}
	v.add(path, "expression reads steps.%s, but there is no step %q", ref, ref)
}

// countSteps holds the definition to MaxSteps, counting the steps of every list at every
// depth (compensations and onFailure too): they bound a run's records per pass.
func (v *validator) countSteps(d *Definition) {
	if n := countSteps(d.Steps) + countSteps(d.OnFailure); n > MaxSteps {
		v.add("/steps", "%d steps (counting the steps nested in parallel, foreach and loop steps); at most %d are allowed", n, MaxSteps)
	}
}

func countSteps(steps []Step) int {
	n := len(steps)
	for i := range steps {
		if steps[i].Compensate != nil {
			n++
		}
		for _, l := range steps[i].Lists() {
			n += countSteps(l.Steps)
		}
	}
	return n
}

// onFailure validates the definition's onFailure steps: a list of their own, which may
// read every top-level step (one that did not run reads as null) and run.error.
func (v *validator) onFailure(steps []Step, top int) {
	if steps == nil {
		return
	}
	v.frames[0].at = top
	v.nested("/onFailure", steps, nil, false)
}

func (v *validator) onError(p, policy string) {
	if policy != "" && policy != OnErrorFail && policy != OnErrorContinue {
		v.add(p, "onError %q must be %s or %s", policy, OnErrorFail, OnErrorContinue)
	}
}

// compensate validates the compensation of the step at position i: a plain step (no id
// needed, no compound kind, no compensation of its own) that may read that step.
func (v *validator) compensate(p string, s *Step, i int) {
	switch {
	case s.Compound():
		v.add(p, "a compensation is one plain step; it cannot be a %s step", s.Kind())
		return
	case s.Compensate != nil:
		v.add(p+"/compensate", "a compensation has no compensation of its own")
	case s.OnError != "":
		v.add(p+"/onError", "a compensation has no onError: a failed compensation is recorded and the others still run")
	}
	if s.ID != "" && !names.Valid(s.ID) {
		v.add(p+"/id", "step id %q must match %s", s.ID, names.Pattern)
	}
	v.stepBody(p, s, i+1)
}

// compound validates the kind fields of a parallel, foreach or loop step at pointer p,
// position i of its list, and the lists it holds.
func (v *validator) compound(p string, s *Step, i int) {
	if !s.Compound() {
		return
	}
	v.frames[len(v.frames)-1].at = i
	switch {
	case s.Parallel != nil:
		v.parallel(p+"/parallel", s.Parallel)
	case s.Foreach != nil:
		v.foreach(p+"/foreach", s.Foreach, i)
	case s.Loop != nil:
		v.loop(p+"/loop", s.Loop)
	}
}

// branchReserved is the path segment of compensations, which no branch id may take.
const branchReserved = "compensate"

func (v *validator) parallel(p string, par *ParallelStep) {
	switch n := len(par.Branches); {
	case n == 0:
		v.add(p+"/branches", "at least one branch is required")
	case n > MaxBranches:
		v.add(p+"/branches", "%d branches; at most %d are allowed", n, MaxBranches)
	}
	seen := map[string]int{}
	for j, b := range par.Branches {
		bp := fmt.Sprintf("%s/branches/%d", p, j)
		switch first, dup := seen[b.ID]; {
		case b.ID == "":
			v.add(bp+"/id", "branch id is required")
		case !names.Valid(b.ID):
			v.add(bp+"/id", "branch id %q must match %s", b.ID, names.Pattern)
		case b.ID == branchReserved:
			v.add(bp+"/id", "branch id %q is reserved: it names a step's compensation in paths", b.ID)
		case dup:
			v.add(bp+"/id", "branch id %q is already used by branch %d", b.ID, first)
		default:
			seen[b.ID] = j
		}
		v.nested(bp+"/steps", b.Steps, nil, true)
	}
}

// varRE is what a foreach's as must match: a name expressions can use.
var varRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)

// reservedVars are the names expressions already use, which as cannot take.
var reservedVars = []string{"input", "steps", "run", "step", IndexVar, IterationVar}

func (v *validator) foreach(p string, f *ForeachStep, i int) {
	if f.Items == nil {
		v.add(p+"/items", "items is required: an expression giving an array")
	} else if t := v.template(p+"/items", f.Items, i); t != nil && t.Static() {
		if _, ok := f.Items.([]any); !ok {
			v.add(p+"/items", "items must be an array or an expression giving one")
		}
	}
	if f.As != "" && (!varRE.MatchString(f.As) || slices.Contains(reservedVars, f.As)) {
		v.add(p+"/as", "as %q must be a name (letters, digits, _) other than %s", f.As, strings.Join(reservedVars, ", "))
	}
	if f.Concurrency < 0 || f.Concurrency > MaxConcurrency {
		v.add(p+"/concurrency", "concurrency must be between 1 and %d", MaxConcurrency)
	}
	vars := []string{f.ItemName(), IndexVar}
	switch {
	case len(f.Steps) > 0 && f.Workflow != nil:
		v.add(p, "a foreach has steps or a workflow, not both")
	case f.Workflow != nil:
		v.frames = append(v.frames, frame{ids: map[string]int{}, vars: vars})
		v.workflow(p+"/workflow", f.Workflow, 0)
		v.frames = v.frames[:len(v.frames)-1]
	case f.Steps == nil:
		v.add(p, "a foreach needs steps or a workflow")
	default:
		v.nested(p+"/steps", f.Steps, vars, true)
	}
}

func (v *validator) loop(p string, l *LoopStep) {
	switch {
	case l.MaxIterations == 0:
		v.add(p+"/maxIterations", "maxIterations is required: at most how many passes the loop makes")
	case l.MaxIterations < 0 || l.MaxIterations > MaxIterations:
		v.add(p+"/maxIterations", "maxIterations must be between 1 and %d", MaxIterations)
	}
	v.nested(p+"/steps", l.Steps, []string{IterationVar}, true, func() {
		v.required(p+"/until", l.Until, len(l.Steps))
	})
}

// nested validates a step list at pointer p that a compound step holds (deeper says so;
// onFailure is not deeper), in a scope of its own with vars; then, in that scope, after
// the functions after (a loop's until).
func (v *validator) nested(p string, steps []Step, vars []string, deeper bool, after ...func()) {
	if deeper && v.nesting+1 > MaxNesting {
		v.add(p, "steps nested more than %d compound steps (parallel, foreach, loop) deep", MaxNesting)
		return
	}
	list, nesting := v.list, v.nesting
	v.list = p
	if deeper {
		v.nesting++
	}
	v.frames = append(v.frames, frame{ids: map[string]int{}, vars: vars})
	v.steps(steps)
	for _, f := range after {
		f()
	}
	v.frames = v.frames[:len(v.frames)-1]
	v.list, v.nesting = list, nesting
}
