package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestOutputsAsRecorded: later steps see a step's output as its record holds it, numbers
// included, whether the output was computed here (set) or handed over by a custom step
// handler that goes on changing the value it returned.
func TestOutputsAsRecorded(t *testing.T) {
	h := newHarness(t)
	held := map[string]any{"n": float64(1), "list": []any{"a"}}
	kinds := map[string]runner.StepHandler{
		"give": runner.StepHandlerFunc(func(context.Context, *runner.StepContext) (any, error) { return held, nil }),
		"change": runner.StepHandlerFunc(func(context.Context, *runner.StepContext) (any, error) {
			held["n"] = float64(2)
			held["list"].([]any)[0] = "changed"
			return nil, nil
		}),
	}
	e := h.engine(runner.Config{Kinds: kinds})
	name := h.define(`
name: outputs
input: {type: object}
steps:
  - {id: a, give: {}}
  - {id: b, change: {}}
  - {id: s, set: {half: "${{ input.n / 2 }}", whole: "${{ input.n * 2 }}", big: "${{ 2 ** 60 }}", text: "<${{ input.n }}>"}}
  - id: c
    set:
      given: "${{ steps.a.output }}"
      mod: "${{ steps.s.output.whole % 3 }}"
      types: "${{ [type(steps.s.output.half), type(steps.s.output.whole), type(steps.s.output.big)] }}"
      s: "${{ steps.s.output }}"
`)
	r := h.run(e, name, `{"n": 3}`, runner.StatusCompleted)
	require.JSONEq(t, `{"given": {"n": 1, "list": ["a"]}, "mod": 0, "types": ["float", "int", "int"],
		"s": {"half": 1.5, "whole": 6, "big": 1152921504606846976, "text": "<3>"}}`, string(r.Output))
	require.JSONEq(t, `{"half":1.5,"whole":6,"big":1152921504606846976,"text":"\u003c3\u003e"}`, string(step(r, "s").Output))
	require.Contains(t, string(step(r, "s").Output), `\u003c3\u003e`, "encoded as json.Marshal does")
}
