package schemas

import "github.com/invopop/jsonschema"

// flowSchema describes the control-flow fields of a step's schema s. A compensation is a
// step without an id, of one plain kind: its own schema, as the step schema requires an id.
func flowSchema(s *jsonschema.Schema) {
	comp := &jsonschema.Schema{
		Type:        "object",
		Description: "A step (no id needed, one plain kind) that runs if the run fails or is cancelled after this step completed; its path is <step>/compensate.",
	}
	for _, k := range kindNames() {
		if k != KindParallel && k != KindForeach && k != KindLoop {
			comp.OneOf = append(comp.OneOf, &jsonschema.Schema{Required: []string{k}})
		}
	}
	s.Properties.Set("compensate", comp)
	describe(s, map[string]string{
		"onError":  "fail (default): a failure of the step fails the run; continue: the run goes on, with steps.<id>.error = {code, message} and steps.<id>.output = null.",
		"parallel": "Named branches of steps that run at once; the output is keyed by branch id.",
		"foreach":  "Steps (or one child run of a workflow) run once per item of an array; the output is each iteration's last output, in item order.",
		"loop":     "Steps run again until until is true after a pass, at most maxIterations passes (LOOP_LIMIT past it).",
	})
}

// JSONSchemaExtend describes a foreach and requires exactly one of steps and workflow.
func (ForeachStep) JSONSchemaExtend(s *jsonschema.Schema) {
	s.OneOf = []*jsonschema.Schema{{Required: []string{"steps"}}, {Required: []string{"workflow"}}}
	describe(s, map[string]string{
		"items":       "An expression giving an array: at most 1000 items with steps, 10000 with a workflow.",
		"as":          "The item's name in expressions (default item); index is its 0-based position.",
		"concurrency": "How many iterations run at once (default 1: one after the other, in order).",
	})
}

// JSONSchemaExtend describes a loop.
func (LoopStep) JSONSchemaExtend(s *jsonschema.Schema) {
	describe(s, map[string]string{
		"until":         "An expression evaluated after each pass; the loop ends when it is true. Passes see iteration (0-based).",
		"maxIterations": "Required: at most this many passes; reaching it without until being true fails the step with LOOP_LIMIT.",
	})
}

// JSONSchemaExtend describes a parallel step.
func (ParallelStep) JSONSchemaExtend(s *jsonschema.Schema) {
	describe(s, map[string]string{
		"failFast": "Default true: the first failed branch cancels the others.",
	})
}
