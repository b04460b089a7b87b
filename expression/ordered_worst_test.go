package expression

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMapEntriesInKeyOrderCharged: the sort the ordered patcher adds to keys, values and
// toPairs is charged for its comparisons, so a large map (as a 1 MB input holds) fails with
// ErrLimit instead of running many times MaxEvalTime, alone, nested or in a loop; a map of
// a thousand entries still gives its entries in order.
func TestMapEntriesInKeyOrderCharged(t *testing.T) {
	// Not parallel: its evaluations would take the time of others, timed by MaxEvalTime.
	mapOf := func(n int) map[string]any {
		m := make(map[string]any, n)
		for i := range n {
			m[fmt.Sprintf("%07d", i*7919%1000003)] = float64(i)
		}
		return m
	}
	small, large := mapOf(1000), mapOf(50000)
	env := Env{"input": map[string]any{"small": small, "large": large}, "steps": map[string]any{}, "run": map[string]any{}}
	for _, expr := range []string{
		"keys(input.large)", "values(input.large)", "toPairs(input.large)",
		"len(keys(input.large))", "sort(keys(input.large))", "sortBy(toPairs(input.large), #[1])",
		"len(keys(fromPairs(toPairs(input.large))))",
		"len(map(1..50, len(keys(input.small))))", "len(map(1..50, len(values(input.small))))",
		"len(map(1..50, len(toPairs(input.small))))",
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
