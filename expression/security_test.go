package expression

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bounds of one hostile evaluation: the work budget plus the overhead of the VM and of the
// values it converts; MaxEvalTime plus one builtin call over MaxWorkBytes of elements, which
// -race on a loaded machine slows down a hundredfold. The time bound says "ends", not "ends
// in 100 ms": ErrLimit with "longer than" shows the time limit itself.
const (
	maxAttackAlloc = 64 << 20
	maxAttackTime  = 100 * MaxEvalTime
)

// attackEnv is testEnv with large inputs a hostile caller may send.
func attackEnv() Env {
	env := testEnv()
	in := env["input"].(map[string]any)
	in["n"] = float64(1000000)
	in["a"] = strings.Repeat("a", 1<<20)
	in["b"] = strings.Repeat("a", 1<<20)
	in["p"] = strings.Repeat("a{1000}", 500)
	return env
}

// evalMeasured evaluates src and reports the error and the bytes allocated meanwhile.
func evalMeasured(t *testing.T, src string, env Env) (error, uint64, time.Duration) {
	t.Helper()
	tpl, err := Compile(src)
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = tpl.Eval(env)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return err, after.TotalAlloc - before.TotalAlloc, took
}

// TestSecurityExpressionLimits performs each attack of issue #10 item 1 for real: every one
// fails with ErrLimit, allocating at most maxAttackAlloc and running about MaxEvalTime at
// most. Not parallel: it reads the process's allocation counters.
func TestSecurityExpressionLimits(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{"repeat", `${{ repeat("a", 2000000) }}`},
		{"nested repeat", `${{ len(repeat(repeat("a", 1000000), input.n)) }}`},
		{"repeat of a large input", `${{ repeat(input.a, 2) }}`},
		{"concatenation loop", `${{ len(reduce(1..100000, #acc + "0123456789abcdef", "")) }}`},
		{"concatenation doubling", `${{ let a = repeat("a", 1000); let b = a + a; let c = b + b; let d = c + c;` +
			` let e = d + d; let f = e + e; let g = f + f; let h = g + g; let i = h + h; let j = i + i; let k = j + j; len(k + k) }}`},
		{"join of a big range", `${{ len(join(map(1..60000, "x"), repeat(",", 1000))) }}`},
		{"join of big strings", `${{ len(join(map(1..1000, input.a), "")) }}`},
		{"range 1..1e9", `${{ len(1..1000000000) }}`},
		{"range of input size", `${{ len(1..(input.n * input.n)) }}`},
		{"map over range", `${{ len(map(1..60000, 1..60000)) }}`},
		{"filter over range", `${{ len(filter(1..60000, len(1..60000) > 0)) }}`},
		{"sort of huge", `${{ len(sort(1..10000000)) }}`},
		{"sort of many copies", `${{ len(sort(flatten(map(1..60000, 1..60000)))) }}`},
		{"deep nesting", `${{ len(map(1..4, map(1..4, map(1..4, map(1..4, map(1..4, map(1..4, map(1..4,` +
			` map(1..4, map(1..4, map(1..4, map(1..4, map(1..4, 1..4))))))))))))) }}`},
		{"long-running loop", `${{ count(1..60000, input.a == input.b) }}`},
		{"toJSON of a shared value", `${{ len(toJSON(map(1..60000, input.a))) }}`},
		{"string of a shared value", `${{ len(string(map(1..60000, input.a))) }}`},
		{"flatten of a shared value", `${{ len(flatten(map(1..60000, map(1..60000, #)))) }}`},
		{"replace growing", `${{ len(replace(input.a, "a", "bbbbbbbb")) }}`},
		{"split into pieces", `${{ len(split(input.a, "")) }}`},
		{"result too large", `${{ map(1..60000, input.a) }}`},
		{"interpolation too large", `${{ input.a }}${{ input.b }}`},
		{"concat doubling", `${{ let a = 1..50000; let b = concat(a, a); let c = concat(b, b); len(concat(c, c)) }}`},
		{"regexp bomb from input", `${{ "aaa" matches input.p }}`},
		{"time format with a large layout", `${{ len(map(1..60000, date("2020-01-02").Format(input.a))) }}`},
		{"fromJSON of a large document", `${{ len(fromJSON("[" + repeat("0,", 500000) + "0]")) }}`},
		{"toJSON of a deep value", `${{ len(toJSON(reduce(1..60000, [#acc], []))) }}`},
		{"string of a deep value", `${{ len(string(reduce(1..60000, [#acc], []))) }}`},
		{"deep result", `${{ reduce(1..20000, [#acc], []) }}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err, alloc, took := evalMeasured(t, tc.src, attackEnv())
			require.ErrorIs(t, err, ErrLimit)
			if strings.Contains(tc.name, "long-running") {
				require.ErrorContains(t, err, "longer than")
			}
			var ee *EvalError
			require.ErrorAs(t, err, &ee)
			require.NotEmpty(t, ee.Expr)
			require.Less(t, alloc, uint64(maxAttackAlloc), "allocated %d bytes", alloc)
			require.Less(t, took, maxAttackTime)
		})
	}
}

// TestSecurityWithinLimits shows that what stays under each limit still evaluates.
func TestSecurityWithinLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want any
	}{
		{`${{ len(repeat("ab", 500000)) }}`, float64(1000000)},
		{`${{ len(join(map(1..1000, "abc"), ",")) }}`, float64(3999)},
		{`${{ len(1..60000) }}`, float64(60000)},
		{`${{ sum(1..1000) }}`, float64(500500)},
		{`${{ count([true, false, true]) }}`, float64(2)},
		{`${{ len(toJSON(map(1..100, input.orderId))) }}`, float64(1002)},
		{`${{ "a" + "b" + input.orderId }}`, "ab1001"},
		{`${{ input.count + 1 }}`, float64(4)},
		{`${{ len(split(repeat("ab", 500000), "", 2)) }}`, float64(2)},
		{`${{ replace("a-b-c", "-", "+") }}`, "a+b+c"},
		{`${{ "a" in ["a"] && "b" matches "^b$" }}`, true},
		{`${{ reduce(1..100, #acc + "x", "") | len() }}`, float64(100)},
		{`${{ len(string(reduce(1..999, [#acc], []))) }}`, float64(2 * MaxValueDepth)},
		{`${{ len(flatten(reduce(1..999, [#acc], []))) }}`, float64(0)},
	}
	for _, tc := range tests {
		tpl, err := Compile(tc.src)
		require.NoError(t, err, tc.src)
		got, err := tpl.Eval(testEnv())
		require.NoError(t, err, tc.src)
		require.Equal(t, tc.want, got, tc.src)
	}
}

// TestSecurityOnePastLimits goes one byte past MaxValueBytes.
func TestSecurityOnePastLimits(t *testing.T) {
	t.Parallel()
	for src, ok := range map[string]bool{
		`${{ len(repeat("a", 1000000) + repeat("a", 48576)) }}`: true,
		`${{ len(repeat("a", 1000000) + repeat("a", 48577)) }}`: false,
		`${{ len(1..65536) }}`: true,
		`${{ len(1..65537) }}`: false,
	} {
		tpl, err := Compile(src)
		require.NoError(t, err)
		_, err = tpl.Eval(testEnv())
		if ok {
			require.NoError(t, err, src)
		} else {
			require.ErrorIs(t, err, ErrLimit, src)
		}
	}
}

// TestSecurityCompileRefused: not parallel, it reads the process's allocation counters.
func TestSecurityCompileRefused(t *testing.T) {
	_, err := Compile(`${{ $env }}`)
	require.ErrorContains(t, err, "$env is not available")
	// Go would compile this 3.5 KB pattern to half a million instructions (~20 MB), while
	// checking the expression, before it ever runs.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Compile(`${{ input.orderId matches "` + strings.Repeat("a{1000}", 500) + `" }}`)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrLimit)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20))
	_, err = Compile(`${{ input.orderId matches "^[a-z]{1,64}(-[0-9]+)?$" }}`)
	require.NoError(t, err)
}
