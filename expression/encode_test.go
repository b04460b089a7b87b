package expression

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func requireMarshalled(t *testing.T, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	require.NoError(t, err)
	got, ok := AppendJSON([]byte("prefix"), v)
	require.True(t, ok, "%#v", v)
	require.Equal(t, "prefix"+string(want), string(got), "%#v", v)
}

func TestAppendJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
	}{
		{"null", nil},
		{"true", true},
		{"false", false},
		{"plain string", "hello world 123"},
		{"empty string", ""},
		{"escapes", "quote \" backslash \\ slash / tab \t nl \n cr \r bs \b ff \f nul \x00 del \x7f"},
		{"html", "<script>a && b</script>"},
		{"unicode", "ü ß 😀 \u2028 \u2029"},
		{"invalid UTF-8", "a\xffb\xc3"},
		{"zero", float64(0)},
		{"negative zero", math.Copysign(0, -1)},
		{"int", float64(42)},
		{"fraction", -3.25},
		{"tiny", 1e-7},
		{"small", 1e-6},
		{"big", 1e20},
		{"exponent", 1e21},
		{"huge", math.MaxFloat64},
		{"smallest", math.SmallestNonzeroFloat64},
		{"2^53+2", float64(1<<53 + 2)},
		{"array", []any{float64(1), "a", nil, true, []any{}, map[string]any{}}},
		{"nil array", []any(nil)},
		{"nil object", map[string]any(nil)},
		{"object", map[string]any{"b": float64(1), "a": "x", "<k>": []any{"&"}, "": nil, "z": map[string]any{"y": 0.5}}},
		{"many keys", func() any {
			m := map[string]any{}
			for i := range 40 {
				m[string(rune('A'+i))] = float64(i)
			}
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireMarshalled(t, tt.v)
		})
	}
}

func TestAppendJSONRandomFloats(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		f := math.Float64frombits(rng.Uint64())
		if rng.IntN(2) == 0 {
			f = math.Trunc(math.Ldexp(rng.Float64(), rng.IntN(90)-20))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		requireMarshalled(t, f)
	}
}

func TestAppendJSONLeavesToMarshal(t *testing.T) {
	t.Parallel()
	deep := any("bottom")
	for range maxDecodedDepth + 1 {
		deep = []any{deep}
	}
	for _, v := range []any{json.Number("1"), 3, struct{}{}, json.RawMessage(`1`), math.NaN(), math.Inf(1),
		[]any{"ok", math.Inf(-1)}, map[string]any{"k": int64(1)}, deep} {
		got, ok := AppendJSON([]byte("x"), v)
		require.False(t, ok, "%T", v)
		require.Equal(t, "x", string(got))
	}
}

// FuzzAppendJSON: whatever JSON a value decodes from, AppendJSON writes it as json.Marshal
// does.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x<y>"],"b":null}`, `"\u2028\ud800"`, `[1e21,1e-7,-0]`, `{"\u00e9":true}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		requireMarshalled(t, v)
	})
}
