package expression

import (
	"time"

	"github.com/expr-lang/expr/vm"
)

// Scope is an Env built once and changed in place between evaluations, for a caller that
// evaluates many templates against one growing environment (a run's steps, one after
// another): an evaluation against it walks and copies nothing, where Eval converts and
// copies its Env every time. Values go in converted (Values), once.
//
// A Scope is not safe for concurrent use. Evaluations never hand out what it holds (their
// results are built anew, see converter.value), so changing it afterwards changes no result
// given before.
type Scope struct {
	vals  map[string]any // as programs see it, budgetVar set for each evaluation
	steps map[string]any
	step  map[string]any
	// budget is the evaluation's, reset for each; machine runs its programs, one after
	// another (expr's VM is made for reuse).
	budget  budget
	machine vm.VM
}

// NewScope returns a Scope with input and run (Env's "input" and "run"), no step output and
// no current step.
func NewScope(input any, run map[string]any) *Scope {
	s := &Scope{steps: map[string]any{}}
	s.vals = map[string]any{"input": Values(input), "steps": s.steps, "run": Values(run)}
	return s
}

// SetOutput sets steps.<id>.output and steps.<id>.conflict.
func (s *Scope) SetOutput(id string, output, conflict any) {
	s.steps[id] = map[string]any{"output": Values(output), "conflict": Values(conflict)}
}

// SetError sets steps.<id> of a step that failed with err (its output, a compound
// step's, holds what completed; conflict is null).
func (s *Scope) SetError(id string, output, err any) {
	s.steps[id] = map[string]any{"output": Values(output), "conflict": nil, "error": Values(err)}
}

// SetVar sets a variable besides Env's (see CompileWith): a foreach iteration's item and
// index, a loop pass's iteration.
func (s *Scope) SetVar(name string, v any) {
	s.vals[name] = Values(v)
}

// SetRunError makes run.error err.
func (s *Scope) SetRunError(err any) {
	run, _ := s.vals["run"].(map[string]any)
	out := make(map[string]any, len(run)+1)
	for k, v := range run {
		out[k] = v
	}
	out["error"] = Values(err)
	s.vals["run"] = out
}

// Child returns a scope that sees what s sees now (a nested step list's scope starts from
// its enclosing list's): what is set in either afterwards the other does not see.
func (s *Scope) Child() *Scope {
	c := &Scope{steps: make(map[string]any, len(s.steps)), vals: make(map[string]any, len(s.vals))}
	for k, v := range s.steps {
		c.steps[k] = v
	}
	for k, v := range s.vals {
		c.vals[k] = v
	}
	c.vals["steps"] = c.steps
	delete(c.vals, "step")
	return c
}

// SetStep makes the step expressions see ("step": id, stepId and attempt) that of step id.
func (s *Scope) SetStep(id, stepID string, attempt int) {
	if s.step == nil {
		s.step = make(map[string]any, 3)
	}
	if s.step["id"] != any(id) || s.step["stepId"] != any(stepID) {
		s.step["id"], s.step["stepId"] = id, stepID
	}
	s.step["attempt"] = attempt
	s.vals["step"] = s.step
}

// ClearStep leaves the scope without a current step, as Env without "step".
func (s *Scope) ClearStep() {
	delete(s.vals, "step")
}

// EvalIn is Eval against s.
func (t *Template) EvalIn(s *Scope) (any, error) {
	s.budget = budget{deadline: time.Now().Add(MaxEvalTime), machine: &s.machine}
	s.vals[budgetVar] = &s.budget
	return t.root.eval(s.vals)
}
