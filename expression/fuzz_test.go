package expression

import (
	"encoding/json"
	"testing"
)

func FuzzCompileEval(f *testing.F) {
	for _, seed := range []string{
		"plain",
		"${{ input.orderId }}",
		"order:${{ input.orderId }}-${{ step.attempt }}",
		`${{ {"a": {"b": [1, 2]}} }}`,
		`${{ "}}" + '{{' }}`,
		"${{ steps.confirm.output.confirmed && input.count > 2 }}",
		`${{ map(input.items, upper(#)) }}`,
		`${{ steps["x"]?.output ?? 1..3 }}`,
		`{"a": ["${{ run.id }}", 1, null, {"b": "${{ input.nested.flag }}"}]}`,
		"${{ ",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		evalQuietly(t, src)
		var v any
		if json.Unmarshal([]byte(src), &v) == nil {
			evalQuietly(t, v)
		}
	})
}

// evalQuietly compiles and evaluates v; errors are fine, a panic fails the fuzz run.
func evalQuietly(t *testing.T, v any) {
	tpl, err := Compile(v)
	if err != nil {
		return
	}
	out, err := tpl.Eval(testEnv())
	if err != nil {
		return
	}
	if _, err := json.Marshal(out); err != nil {
		t.Fatalf("Eval(%q) gave a value that is not JSON: %v", v, err)
	}
}
