package expression

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func testEnv() Env {
	return Env{
		"input": map[string]any{
			"orderId": "1001",
			"count":   float64(3),
			"big":     json.Number("9007199254740993"),
			"items":   []any{"a", "b"},
			"nested":  map[string]any{"flag": true},
		},
		"steps": map[string]any{
			"confirm": map[string]any{"output": map[string]any{"confirmed": true}, "conflict": nil},
			"skipped": map[string]any{"output": nil},
		},
		"run":  map[string]any{"id": "r1", "workflow": "wf", "version": float64(2), "environment": "test"},
		"step": map[string]any{"id": "charge", "stepId": "s-1", "attempt": float64(1)},
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"plain string", "hello", "hello"},
		{"string keeps type", "${{ input.orderId }}", "1001"},
		{"number keeps type", "${{ input.count }}", float64(3)},
		{"arithmetic", "${{ input.count * 2 + 1 }}", float64(7)},
		{"bool keeps type", "${{ steps.confirm.output.confirmed }}", true},
		{"object keeps type", "${{ input.nested }}", map[string]any{"flag": true}},
		{"array keeps type", "${{ input.items }}", []any{"a", "b"}},
		{"null keeps type", "${{ input.missing }}", nil},
		{"spaces around", "  ${{ input.count }}", "  3"},
		{"interpolation", "order:${{ input.orderId }}", "order:1001"},
		{"interpolation of json", "n=${{ input.count }} f=${{ input.nested }} x=${{ input.none }}", `n=3 f={"flag":true} x=null`},
		{"two expressions", "${{ run.id }}${{ step.stepId }}", "r1s-1"},
		{"nested values", map[string]any{
			"a": []any{"${{ input.count }}", float64(1), true, nil},
			"b": map[string]any{"c": "id ${{ run.workflow }}"},
		}, map[string]any{
			"a": []any{float64(3), float64(1), true, nil},
			"b": map[string]any{"c": "id wf"},
		}},
		{"missing step is nil", "${{ steps.nope.output.confirmed }}", nil},
		{"skipped step output is nil", "${{ steps.skipped.output.confirmed }}", nil},
		{"index syntax", `${{ steps["confirm"].output.confirmed }}`, true},
		{"big json.Number keeps digits", "${{ input.big }}", json.Number("9007199254740993")},
		{"json.Number arithmetic", "${{ step.attempt + 1 }}", float64(2)},
		{"map literal with braces", `${{ {"a": {"b": input.count}} }}`, map[string]any{"a": map[string]any{"b": float64(3)}}},
		{"closing braces in string literal", `${{ "}}" }}`, "}}"},
		{"literal opener", `${{ "${{" }} x`, "${{ x"},
		{"builtin", "${{ upper(input.orderId + 'x') }}", "1001X"},
		{"range to array", "${{ 1..3 }}", []any{float64(1), float64(2), float64(3)}},
		{"split to array", `${{ split("a,b", ",") }}`, []any{"a", "b"}},
		{"conditional", `${{ input.count > 2 ? "many" : "few" }}`, "many"},
		{"nil coalescing", `${{ input.missing ?? "default" }}`, "default"},
		{"duration", `${{ duration("1h") }}`, "1h0m0s"},
		{"static number", float64(5), float64(5)},
		{"static json.Number", json.Number("5"), json.Number("5")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tpl, err := Compile(tc.in)
			require.NoError(t, err)
			got, err := tpl.Eval(testEnv())
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEvalUseNumberInput(t *testing.T) {
	t.Parallel()
	env := testEnv()
	env["input"] = map[string]any{"count": json.Number("3"), "price": json.Number("1.5")}
	tpl, err := Compile("${{ input.count * input.price }}")
	require.NoError(t, err)
	got, err := tpl.Eval(env)
	require.NoError(t, err)
	require.Equal(t, 4.5, got)
}

func TestEvalDoesNotShareStaticValues(t *testing.T) {
	t.Parallel()
	tpl, err := Compile(map[string]any{"a": []any{"x"}})
	require.NoError(t, err)
	first, err := tpl.Eval(nil)
	require.NoError(t, err)
	first.(map[string]any)["a"].([]any)[0] = "changed"
	second, err := tpl.Eval(nil)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": []any{"x"}}, second)
}

func TestRefsAndStatic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     any
		refs   []string
		static bool
	}{
		{"no expressions", map[string]any{"a": "b", "c": []any{float64(1)}}, []string{}, true},
		{"expression without refs", "${{ input.x }}", []string{}, false},
		{"dot and index refs", map[string]any{
			"a": "${{ steps.b.output }} ${{ steps.a.conflict }}",
			"b": []any{`${{ steps["c"].output }}`, "${{ steps.a.output }}"},
		}, []string{"a", "b", "c"}, false},
		{"computed ref not listed", "${{ steps[input.name].output }}", []string{}, false},
		{"ref inside builtin", "${{ len(steps.items.output) }}", []string{"items"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tpl, err := Compile(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.refs, tpl.Refs())
			require.Equal(t, tc.static, tpl.Static())
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       any
		path     string
		offset   int
		contains string
	}{
		{"syntax", "x ${{ input.a + }}", "", 2, "unexpected token"},
		{"unknown name", "${{ foo }}", "", 0, "unknown name foo"},
		{"unknown step field", "${{ steps.a.ouptut }}", "", 0, "ouptut"},
		{"unknown run field", "${{ run.name }}", "", 0, "name"},
		{"empty", "${{  }}", "", 0, "empty expression"},
		{"unterminated", "a ${{ input.x", "", 2, "missing"},
		{"unterminated string literal", `${{ "abc }}`, "", 0, "unterminated string"},
		{"now is disabled", "${{ now() }}", "", 0, "now"},
		{"too long", "${{ " + strings.Repeat("1+", MaxExpressionLength) + "1 }}", "", 0, "limit"},
		{"too many nodes", "${{ " + strings.TrimSuffix(strings.Repeat("a+", 1500), "+") + " }}", "", 0, "maximum allowed nodes"},
		{"nested path", map[string]any{"a/b": []any{"ok", "${{ ) }}"}}, "/a~1b/1", 0, "unexpected"},
		{"not json", map[string]any{"a": struct{}{}}, "/a", 0, "not JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tc.in)
			require.Error(t, err)
			var ce *CompileError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.path, ce.Path)
			require.Equal(t, tc.offset, ce.Offset)
			require.Contains(t, err.Error(), tc.contains)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		src      string
		contains string
	}{
		{"loop budget", "${{ map(1..2000, map(1..2000, #)) }}", "expression limit exceeded"},
		{"repeat budget", `${{ repeat("abcdefgh", 1000000) }}`, "over 1048576 bytes"},
		{"type mismatch", "${{ input.orderId - 1 }}", "invalid operation"},
		{"not a json number", "${{ 1 / 0 }}", "not a JSON number"},
		{"index out of range", "${{ input.items[5] }}", "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tpl, err := Compile(tc.src)
			require.NoError(t, err)
			_, err = tpl.Eval(testEnv())
			var ee *EvalError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, strings.TrimSuffix(strings.TrimPrefix(tc.src, "${{"), "}}"), ee.Expr)
			require.Contains(t, err.Error(), tc.contains)
			require.NotNil(t, errors.Unwrap(err))
		})
	}
}

func TestTruthy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    any
		want bool
	}{
		{nil, false}, {false, false}, {true, true}, {"", false}, {"no", true},
		{float64(0), false}, {0.5, true}, {0, false}, {int64(2), true},
		{json.Number("0"), false}, {json.Number("0.0"), false}, {json.Number("1"), true},
		{[]any{}, true}, {map[string]any{}, true},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, Truthy(tc.v), "%#v", tc.v)
	}
}

// TestValuesEvaluateAlike: an Env whose values were converted once with Values evaluates
// exactly as the same Env holding the json.Numbers a decoder gives, and Values copies
// nothing that holds no json.Number.
func TestValuesEvaluateAlike(t *testing.T) {
	dec := func(s string) any {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		require.NoError(t, d.Decode(&v))
		return v
	}
	input := `{"n": 41, "f": 1.5, "big": 12345678901234567890, "list": [1, 2.5, {"k": 3}], "s": "x"}`
	for _, expr := range []string{
		"${{ input.n + 1 }}", "${{ input.f * 2 }}", "${{ input.big }}", "${{ input.list[2].k + input.list[1] }}",
		"${{ input }}", "${{ steps.a.output.n > 40 }}", `${{ input.s + "y" }}`,
	} {
		tpl, err := Compile(expr)
		require.NoError(t, err, expr)
		raw, err := tpl.Eval(Env{"input": dec(input), "steps": map[string]any{"a": map[string]any{"output": dec(input)}}})
		require.NoError(t, err, expr)
		converted, err := tpl.Eval(Env{"input": Values(dec(input)), "steps": map[string]any{"a": map[string]any{"output": Values(dec(input))}}})
		require.NoError(t, err, expr)
		require.Equal(t, raw, converted, expr)
	}
	plain := map[string]any{"s": "x", "l": []any{"y", true}}
	require.Equal(t, fmt.Sprintf("%p", plain), fmt.Sprintf("%p", Values(plain)), "nothing to convert: not copied")
}
