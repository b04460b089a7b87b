package expression

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// roundTrip is what AsDecoded stands for: v encoded, decoded with UseNumber, converted.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	require.NoError(t, dec.Decode(&out))
	return Values(out)
}

func TestAsDecoded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
	}{
		{"null", nil},
		{"bool", true},
		{"string", "a <b> & \"c\" ü 😀"},
		{"zero", float64(0)},
		{"negative zero", math.Copysign(0, -1)},
		{"small int", float64(3)},
		{"negative int", float64(-42)},
		{"fraction", 1.5},
		{"tiny", 1e-7},
		{"2^53", float64(1 << 53)},
		{"-2^53", -float64(1 << 53)},
		{"2^53+2", float64(1<<53 + 2)},
		{"2^62", float64(1 << 62)},
		{"below 2^63", math.Nextafter(float64(1<<63), 0)},
		{"2^63", float64(1 << 63)},
		{"-2^63", -float64(1 << 63)},
		{"1e20", 1e20},
		{"1e21", 1e21},
		{"-1e21", -1e21},
		{"huge", math.MaxFloat64},
		{"smallest", math.SmallestNonzeroFloat64},
		{"number int", json.Number("9007199254740993")},
		{"number float", json.Number("1.0")},
		{"number exponent", json.Number("1e3")},
		{"number beyond int64", json.Number("92233720368547758070")},
		{"empty array", []any{}},
		{"empty object", map[string]any{}},
		{"nil array", []any(nil)},
		{"nil object", map[string]any(nil)},
		{"nested", map[string]any{
			"n": float64(1), "f": 0.25, "s": "x", "b": false, "z": nil,
			"a": []any{float64(2), "y", map[string]any{"deep": []any{float64(1 << 60), json.Number("7")}}},
			"o": map[string]any{"k": "no numbers"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := AsDecoded(tt.v)
			require.True(t, ok)
			require.Equal(t, roundTrip(t, tt.v), got)
		})
	}
}

func TestAsDecodedRandomFloats(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var f float64
		switch rng.IntN(3) {
		case 0: // any bits
			f = math.Float64frombits(rng.Uint64())
		case 1: // integers of every size
			f = math.Trunc(math.Ldexp(rng.Float64(), rng.IntN(80)))
		default:
			f = float64(rng.Int64()) * float64(1-2*rng.IntN(2))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		got, ok := AsDecoded(f)
		require.True(t, ok)
		require.Equal(t, roundTrip(t, f), got, "%v", f)
	}
}

func TestAsDecodedLeavesToEncoding(t *testing.T) {
	t.Parallel()
	deep := any("bottom")
	for range maxDecodedDepth + 1 {
		deep = []any{deep}
	}
	tests := []struct {
		name string
		v    any
	}{
		{"invalid UTF-8", "a\xffb"},
		{"invalid UTF-8 key", map[string]any{"\xff": "x"}},
		{"invalid UTF-8 inside", []any{"ok", map[string]any{"k": "\xc3"}}},
		{"Go int", 3},
		{"Go struct", struct{ A int }{1}},
		{"raw message", json.RawMessage(`{"a":1}`)},
		{"NaN", math.NaN()},
		{"too deep", deep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ok := AsDecoded(tt.v)
			require.False(t, ok)
		})
	}
}

// TestAsDecodedOfEvalResults: what templates give, as expressions then see it, is what they
// would see after encoding and decoding.
func TestAsDecodedOfEvalResults(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"${{ input }}", "${{ input.count * 2 }}", "${{ input.count / 2 }}", "${{ 2 ** 62 }}",
		"${{ 2 ** 70 }}", "${{ -0.0 }}", "${{ 1e21 }}", "${{ 1..5 }}", "${{ input.items }}",
		`${{ {"a": 1, "b": [1.5, 2, "x"], "c": nil} }}`, "${{ input.big }}", "${{ input.big + 1 }}",
		"x ${{ input.count }}",
	} {
		tmpl, err := Compile(src)
		require.NoError(t, err, src)
		v, err := tmpl.Eval(testEnv())
		require.NoError(t, err, src)
		got, ok := AsDecoded(v)
		require.True(t, ok, src)
		require.Equal(t, roundTrip(t, v), got, src)
	}
}
