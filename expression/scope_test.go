package expression

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// scopeOf builds the Scope holding what env (testEnv's shape) holds.
func scopeOf(env Env) *Scope {
	s := NewScope(env["input"], env["run"].(map[string]any))
	for id, st := range env["steps"].(map[string]any) {
		m := st.(map[string]any)
		s.SetOutput(id, m["output"], m["conflict"])
	}
	if st, ok := env["step"].(map[string]any); ok {
		s.SetStep(st["id"].(string), st["stepId"].(string), st["attempt"].(int))
	}
	return s
}

var scopeSources = []any{
	"${{ input }}", "${{ input.count * 2 + 1 }}", "${{ input.big }}", "${{ input.big + 1 }}",
	"${{ steps }}", "${{ steps.confirm.output.confirmed }}", "${{ steps.confirm.conflict }}",
	"${{ steps.skipped.output }}", "${{ steps.nope.output.x }}", `${{ steps["confirm"] }}`,
	"${{ run }}", "${{ run.version + 1 }}", "${{ step }}", "${{ step.attempt * 10 }}",
	"${{ step.id }}/${{ step.stepId }}", "${{ step == nil }}", "${{ type(step) }}",
	"${{ type(step.attempt) }}", "${{ len(steps) }}", "${{ sort(keys(input)) }}",
	map[string]any{"a": []any{"${{ input.items }}", float64(1)}, "b": "n=${{ input.count }}"},
}

// TestScopeEvaluatesAsEnv: a Scope holding an Env's values evaluates every template as Eval
// does against that Env, with and without a current step.
func TestScopeEvaluatesAsEnv(t *testing.T) {
	t.Parallel()
	withStep := testEnv()
	// A runner sets both of a step's keys.
	withStep["steps"].(map[string]any)["skipped"] = map[string]any{"output": nil, "conflict": nil}
	withStep["step"] = map[string]any{"id": "charge", "stepId": "s-1", "attempt": 1}
	noStep := Env{"input": withStep["input"], "steps": withStep["steps"], "run": withStep["run"]}
	for _, src := range scopeSources {
		tmpl, err := Compile(src)
		require.NoError(t, err, src)
		s := scopeOf(withStep)
		for _, env := range []Env{withStep, noStep} {
			if _, ok := env["step"]; !ok {
				s.ClearStep()
			}
			want, wantErr := tmpl.Eval(env)
			got, err := tmpl.EvalIn(s)
			require.Equal(t, wantErr, err, src)
			require.Equal(t, want, got, src)
		}
	}
}

// TestScopeChangesLeaveResultsAlone: results share nothing with the scope, so what is set
// afterwards (a step's output, the next step) changes no result given before.
func TestScopeChangesLeaveResultsAlone(t *testing.T) {
	t.Parallel()
	s := NewScope(map[string]any{"list": []any{json.Number("1")}, "obj": map[string]any{"k": "v"}},
		map[string]any{"id": "r1", "workflow": "wf", "version": 1, "environment": "test"})
	s.SetOutput("a", map[string]any{"n": float64(1)}, nil)
	s.SetStep("b", "s-b", 1)
	tmpl, err := Compile(map[string]any{"in": "${{ input }}", "steps": "${{ steps }}", "step": "${{ step }}"})
	require.NoError(t, err)
	first, err := tmpl.EvalIn(s)
	require.NoError(t, err)
	want := map[string]any{
		"in":    map[string]any{"list": []any{float64(1)}, "obj": map[string]any{"k": "v"}},
		"steps": map[string]any{"a": map[string]any{"output": map[string]any{"n": float64(1)}, "conflict": nil}},
		"step":  map[string]any{"id": "b", "stepId": "s-b", "attempt": float64(1)},
	}
	require.Equal(t, want, first)

	s.SetOutput("b", "out", nil)
	s.SetOutput("a", "replaced", nil)
	s.SetStep("c", "s-c", 2)
	require.Equal(t, want, first)
	second, err := tmpl.EvalIn(s)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"id": "c", "stepId": "s-c", "attempt": float64(2)}, second.(map[string]any)["step"])
	require.Len(t, second.(map[string]any)["steps"], 2)
}

// TestScopeBudgetPerEvaluation: every evaluation in a Scope has its own budget, on the
// Scope's one VM: one that goes over fails with ErrLimit, the next starts afresh.
func TestScopeBudgetPerEvaluation(t *testing.T) {
	t.Parallel()
	s := NewScope(map[string]any{"n": float64(1)}, map[string]any{"id": "r"})
	heavy, err := Compile(`${{ len(repeat("a", 1000000)) }}`)
	require.NoError(t, err)
	over, err := Compile(`${{ repeat("a", 2000000) }}`)
	require.NoError(t, err)
	for range 12 { // 12 MB of work in all, more than one budget's MaxWorkBytes
		v, err := heavy.EvalIn(s)
		require.NoError(t, err, "each evaluation's work is counted afresh")
		require.Equal(t, float64(1000000), v)
		_, err = over.EvalIn(s)
		require.ErrorIs(t, err, ErrLimit)
	}
}
