package schemas

import (
	"slices"
	"strconv"
)

// Bounds of the control-flow step kinds (SPEC §2 "Control flow").
const (
	// MaxNesting is how many compound steps (parallel, foreach, loop) may hold one another:
	// a step list inside more is refused.
	MaxNesting = 8
	// MaxIterations bounds a foreach with inline steps (its items) and a loop (its
	// maxIterations): every iteration's records live in the run.
	MaxIterations = 1000
	// MaxChildIterations bounds a foreach with a workflow: each item is a child run of its own.
	MaxChildIterations = 10000
	// MaxConcurrency is the highest concurrency a foreach may set: the iterations one worker
	// runs at once.
	MaxConcurrency = 100
	// MaxBranches is how many branches a parallel step may have.
	MaxBranches = 100
)

// Control-flow step kind names.
const (
	KindParallel = "parallel"
	KindForeach  = "foreach"
	KindLoop     = "loop"
)

// onError policies of a step.
const (
	OnErrorFail     = "fail"
	OnErrorContinue = "continue"
)

// DefaultItemName is what a foreach iteration calls its item when as is not set.
const DefaultItemName = "item"

// Names of the variables the nested lists' expressions see besides Env's.
const (
	IndexVar     = "index"
	IterationVar = "iteration"
)

// ParallelStep runs its branches at once; its output is keyed by branch id.
type ParallelStep struct {
	// FailFast (default true): the first failed branch cancels the others.
	FailFast *bool    `json:"failFast,omitempty"`
	Branches []Branch `json:"branches"`
}

// FailsFast reports whether the first failed branch cancels the others.
func (p *ParallelStep) FailsFast() bool { return p.FailFast == nil || *p.FailFast }

// Branch is one named list of steps of a parallel step.
type Branch struct {
	ID    string `json:"id"`
	Steps []Step `json:"steps"`
}

// ForeachStep runs its steps, or one child run of a workflow, once per item of an array.
type ForeachStep struct {
	// Items must evaluate to an array (usually one expression).
	Items any `json:"items"`
	// As names the item in expressions (default "item"); index is its 0-based position.
	As string `json:"as,omitempty"`
	// Concurrency is how many iterations run at once (default 1: one after the other).
	Concurrency int           `json:"concurrency,omitempty" jsonschema:"minimum=1,maximum=100"`
	Steps       []Step        `json:"steps,omitempty"`
	Workflow    *WorkflowStep `json:"workflow,omitempty"`
}

// ItemName is the name of the item in the iteration's expressions.
func (f *ForeachStep) ItemName() string {
	if f.As == "" {
		return DefaultItemName
	}
	return f.As
}

// LoopStep runs its steps again until until is true after a pass, at most MaxIterations times.
type LoopStep struct {
	Until         string `json:"until"`
	MaxIterations int    `json:"maxIterations" jsonschema:"minimum=1,maximum=1000"`
	Steps         []Step `json:"steps"`
}

// Compound reports whether the step holds steps of its own (parallel, foreach, loop).
func (s *Step) Compound() bool { return s.Parallel != nil || s.Foreach != nil || s.Loop != nil }

// Lists returns the step lists the step holds, each with its JSON pointer relative to the
// step: a parallel's branches, a foreach's or a loop's steps. A plain step has none.
func (s *Step) Lists() []StepList {
	var out []StepList
	if s.Parallel != nil {
		for i := range s.Parallel.Branches {
			b := &s.Parallel.Branches[i]
			out = append(out, StepList{Pointer: "/parallel/branches/" + strconv.Itoa(i) + "/steps", Name: b.ID, Steps: b.Steps})
		}
	}
	if s.Foreach != nil && len(s.Foreach.Steps) > 0 {
		out = append(out, StepList{Pointer: "/foreach/steps", Steps: s.Foreach.Steps})
	}
	if s.Loop != nil {
		out = append(out, StepList{Pointer: "/loop/steps", Steps: s.Loop.Steps})
	}
	return out
}

// StepList is one list of steps a compound step holds.
type StepList struct {
	// Pointer is the list's JSON pointer relative to the step that holds it.
	Pointer string
	// Name is the branch id of a parallel's branch, else empty.
	Name  string
	Steps []Step
}

// anyNested reports whether f holds for a step s holds: its lists' steps and its
// compensation.
func anyNested(s *Step, f func(Step) bool) bool {
	for _, l := range s.Lists() {
		if slices.ContainsFunc(l.Steps, f) {
			return true
		}
	}
	return s.Compensate != nil && f(*s.Compensate)
}

// childRuns reports whether the step is a foreach that starts a child run per item.
func childRuns(s *Step) bool { return s.Foreach != nil && s.Foreach.Workflow != nil }
