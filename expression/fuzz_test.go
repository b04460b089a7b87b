package expression

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"
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
		`${{ len(repeat(repeat("a", 1000000), input.count)) }}`,
		`${{ reduce(1..1000, #acc + "abcdefgh", "") }}`,
		`${{ toJSON(map(1..1000, input.items)) }}`,
		`${{ join(map(1..100, string(#)), repeat(",", 100)) }}`,
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

// Bounds one fuzzed evaluation must keep: the limits plus room for the VM, the conversion of
// the result and a loaded machine.
const (
	fuzzMaxAlloc = 64 << 20
	fuzzMaxTime  = 100 * MaxEvalTime
)

// evalQuietly compiles and evaluates v; errors are fine, a panic or going past the memory or
// time bound fails the fuzz run.
func evalQuietly(t *testing.T, v any) {
	tpl, err := Compile(v)
	if err != nil {
		return
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	out, err := tpl.Eval(testEnv())
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > fuzzMaxAlloc || took > fuzzMaxTime {
		t.Fatalf("Eval(%q) allocated %d bytes in %s", v, alloc, took)
	}
	if err != nil {
		return
	}
	if _, err := json.Marshal(out); err != nil {
		t.Fatalf("Eval(%q) gave a value that is not JSON: %v", v, err)
	}
}
