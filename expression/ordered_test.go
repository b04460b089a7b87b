package expression

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMapEntriesInKeyOrder: keys, values and toPairs give a map's entries in key order on
// every evaluation (expr gives Go's map order, which varies), also nested in other
// builtins and on maps built by the expression, so that a step evaluated again after a
// crash gives what it gave before.
func TestMapEntriesInKeyOrder(t *testing.T) {
	t.Parallel()
	m := map[string]any{}
	var keys, values []any
	var pairs []any
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		m[k] = float64(i)
		keys = append(keys, k)
		values = append(values, float64(i))
		pairs = append(pairs, []any{k, float64(i)})
	}
	env := Env{"input": map[string]any{"m": m}, "steps": map[string]any{}, "run": map[string]any{}, "step": map[string]any{}}
	for _, tc := range []struct {
		expr string
		want any
	}{
		{"keys(input.m)", keys},
		{"values(input.m)", values},
		{"toPairs(input.m)", pairs},
		{"first(keys(input.m))", "k00"},
		{"join(keys(input.m), ',')[0:7]", "k00,k01"},
		{"keys({'b': 1, 'a': 2, 'c': 3})", []any{"a", "b", "c"}},
		{"values({'b': 1, 'a': 2, 'c': 3})", []any{float64(2), float64(1), float64(3)}},
		{"len(keys(input.m))", float64(20)},
	} {
		tmpl, err := Compile("${{ " + tc.expr + " }}")
		require.NoError(t, err, tc.expr)
		for range 20 {
			got, err := tmpl.Eval(env)
			require.NoError(t, err, tc.expr)
			require.Equal(t, tc.want, got, tc.expr)
		}
	}
}
