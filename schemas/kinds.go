package schemas

import (
	"slices"
)

// StepKind is one row of the step-kind table: what the definition format knows about a kind
// of step. The engine's table (in package runner) is keyed by the same names and adds how
// each kind runs; custom kinds an embedder registers there are described by CustomKind.
type StepKind struct {
	// Name is the key that holds the kind's body in a step.
	Name string
	// Effects says running the step does more than compute its output from the run's own
	// record (its input and earlier steps' outputs): it reads or changes something else (the
	// store, a token, another run, the clock, the network). A step without effects gives the
	// same output every time it runs, so the engine need not commit it on its own.
	Effects bool
	// ReachesOut says running the step may reach outside GoRunner (a request, a child run
	// whose steps may, an embedder's code): a tool whose workflow has one is open-world.
	ReachesOut bool

	has    func(*Step) bool // whether a step holds this kind
	writes func(*Step) bool // whether such a step may change something
}

// Writes reports whether step s, of this kind, may change something: an http request other
// than GET, a run step, a child workflow, a hook (which consumes a payload), a custom kind.
func (k StepKind) Writes(s *Step) bool { return k.writes(s) }

func never(*Step) bool  { return false }
func always(*Step) bool { return true }

// stepKinds is the table of built-in kinds, in the order of the SPEC's table; Step.Kinds
// reports them in this order.
var stepKinds = []StepKind{
	{Name: KindSet, has: func(s *Step) bool { return s.Set != nil }, writes: never},
	{Name: KindHTTP, Effects: true, ReachesOut: true, has: func(s *Step) bool { return s.HTTP != nil },
		writes: func(s *Step) bool { return s.HTTP.Method != "" && s.HTTP.Method != "GET" }},
	{Name: KindHook, Effects: true, has: func(s *Step) bool { return s.Hook != nil }, writes: always},
	{Name: KindSleep, Effects: true, has: func(s *Step) bool { return s.Sleep != nil }, writes: never},
	{Name: KindRun, Effects: true, has: func(s *Step) bool { return s.Run != nil }, writes: always},
	{Name: KindWorkflow, Effects: true, ReachesOut: true, has: func(s *Step) bool { return s.Workflow != nil }, writes: always},
	{Name: KindFail, has: func(s *Step) bool { return s.Fail != nil }, writes: never},
	{Name: KindMCP, Effects: true, ReachesOut: true, has: func(s *Step) bool { return s.MCP != nil }, writes: always},
	// The compound kinds reach out and write as the steps they hold do (reachesOut,
	// mayWrite); a foreach with a workflow starts child runs.
	{Name: KindParallel, Effects: true, has: func(s *Step) bool { return s.Parallel != nil }, writes: never},
	{Name: KindForeach, Effects: true, has: func(s *Step) bool { return s.Foreach != nil }, writes: childRuns},
	{Name: KindLoop, Effects: true, has: func(s *Step) bool { return s.Loop != nil }, writes: never},
}

// BuiltinKinds returns the built-in step kinds, in the order of the SPEC's table.
func BuiltinKinds() []StepKind { return slices.Clone(stepKinds) }

// CustomKind describes a kind an embedder adds: its code is opaque to GoRunner, so it is
// taken to have effects, reach out and write.
func CustomKind(name string) StepKind {
	return StepKind{Name: name, Effects: true, ReachesOut: true, writes: always}
}

// KindOf returns the table row of the step's kind (Step.Kind): a built-in kind, else a
// custom one (CustomKind); a step with no kind gets a row with an empty name.
func KindOf(s *Step) StepKind {
	for _, k := range stepKinds {
		if k.has(s) {
			return k
		}
	}
	return CustomKind(s.Kind())
}

// ReservedStepKey reports whether name is a key of a step's own (id, if, retry, timeout or
// a built-in kind), which a custom kind cannot be called.
func ReservedStepKey(name string) bool {
	_, ok := stepFields()[name]
	return ok
}

// kindNames are the built-in kind names, in table order.
func kindNames() []string {
	names := make([]string, len(stepKinds))
	for i, k := range stepKinds {
		names[i] = k.Name
	}
	return names
}

// Kinds returns the names of every kind the step sets: built-in kinds first, in the order of
// the SPEC table, then custom kinds sorted. A valid step has exactly one.
func (s *Step) Kinds() []string {
	var kinds []string
	for _, k := range stepKinds {
		if k.has(s) {
			kinds = append(kinds, k.Name)
		}
	}
	custom := make([]string, 0, len(s.Custom))
	for k := range s.Custom {
		custom = append(custom, k)
	}
	slices.Sort(custom)
	return append(kinds, custom...)
}

// Kind returns the step's kind: a built-in kind name or a custom kind name, "" when none is
// set. A step with several kinds (refused by Validate) reports the first of Kinds.
func (s *Step) Kind() string {
	if kinds := s.Kinds(); len(kinds) > 0 {
		return kinds[0]
	}
	return ""
}

// ReachesOut reports whether a step can reach outside GoRunner: an http step, a child
// workflow, an embedder's custom kind.
func ReachesOut(steps []Step) bool {
	return slices.IndexFunc(steps, reachesOut) >= 0
}

// reachesOut reports whether a step, or one it holds (its compensation too), reaches out.
func reachesOut(s Step) bool {
	return KindOf(&s).ReachesOut || childRuns(&s) || anyNested(&s, reachesOut)
}

// mayWrite reports whether a step, or one it holds (its compensation too), may change
// something (StepKind.Writes).
func mayWrite(s Step) bool { return KindOf(&s).Writes(&s) || anyNested(&s, mayWrite) }
