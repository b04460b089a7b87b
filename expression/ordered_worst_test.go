package expression

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMapEntriesInKeyOrderCharged: the sort the ordered patcher adds to keys, values and
// toPairs is charged for its comparisons, so a large map (as a 1 MB input holds) fails with
// ErrLimit instead of running many times MaxEvalTime, alone, nested or in a loop; a map of
// a few hundred entries still gives its entries in order.
func TestMapEntriesInKeyOrderCharged(t *testing.T) {
	// Not parallel: its evaluations would take the time of others, timed by MaxEvalTime.
	mapOf := func(n int) map[string]any {
		m := make(map[string]any, n)
		for i := range n {
			m[fmt.Sprintf("%07d", i*7919%1000003)] = float64(i)
		}
		return m
	}
	small, large := mapOf(200), mapOf(50000)
	env := Env{"input": map[string]any{"small": small, "large": large}, "steps": map[string]any{}, "run": map[string]any{}}
	for _, expr := range []string{
		"keys(input.large)", "values(input.large)", "toPairs(input.large)",
		"len(keys(input.large))", "sort(keys(input.large))", "sortBy(toPairs(input.large), #[1])",
		"len(keys(fromPairs(toPairs(input.large))))",
		"len(map(1..1000, len(keys(input.small))))", "len(map(1..1000, len(values(input.small))))",
		"len(map(1..1000, len(toPairs(input.small))))",
	} {
		tmpl, err := Compile("${{ " + expr + " }}")
		require.NoError(t, err, expr)
		_, err = tmpl.Eval(env)
		require.ErrorIs(t, err, ErrLimit, expr)
	}
	for _, expr := range []string{"keys(input.small)", "values(input.small)", "toPairs(input.small)"} {
		tmpl, err := Compile("${{ " + expr + " }}")
		require.NoError(t, err, expr)
		v, err := tmpl.Eval(env)
		require.NoError(t, err, expr)
		require.Len(t, v, len(small), expr)
	}
	tmpl, err := Compile("${{ keys(input.small) == sort(keys(input.small)) }}")
	require.NoError(t, err)
	v, err := tmpl.Eval(env)
	require.NoError(t, err)
	require.Equal(t, true, v)
}

// TestSortByCharged: sortBy, its array now bound and charged first, sorts as before in
// every form (an order, nested in a predicate, of its own result).
func TestSortByCharged(t *testing.T) {
	t.Parallel()
	xs := []any{map[string]any{"n": float64(2), "l": []any{float64(3), float64(1)}}, map[string]any{"n": float64(1), "l": []any{float64(2)}}}
	env := Env{"input": map[string]any{"xs": xs}, "steps": map[string]any{}, "run": map[string]any{}}
	for _, tc := range []struct {
		expr string
		want any
	}{
		{"sortBy(input.xs, #.n)", []any{xs[1], xs[0]}},
		{"sortBy(input.xs, #.n, 'desc')", []any{xs[0], xs[1]}},
		{"map(input.xs, sortBy(#.l, #))", []any{[]any{float64(1), float64(3)}, []any{float64(2)}}},
		{"sortBy(sortBy(input.xs, #.n), -#.n)", []any{xs[0], xs[1]}},
		{"sort(keys({'b': 1, 'a': 2}), 'desc')", []any{"b", "a"}},
	} {
		tmpl, err := Compile("${{ " + tc.expr + " }}")
		require.NoError(t, err, tc.expr)
		got, err := tmpl.Eval(env)
		require.NoError(t, err, tc.expr)
		require.Equal(t, tc.want, got, tc.expr)
	}
}
