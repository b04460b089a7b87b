package canonjson_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/canonjson"
)

func TestTransform(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"key order", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"nested key order", `{"z":{"y":[{"b":0,"a":0}]},"a":null}`, `{"a":null,"z":{"y":[{"a":0,"b":0}]}}`},
		{"whitespace", " {\n\t\"a\" : [ 1 , true ,false, null ] }\r\n", `{"a":[1,true,false,null]}`},
		{"integer spellings", `[1, 1.0, 1e0, 10e-1, 0.1e1, 1E+0]`, `[1,1,1,1,1,1]`},
		{"negative zero", `[-0, -0.0, 0e5, 0.000]`, `[0,0,0,0]`},
		{"1e15 as integer", `[1e15, 1000000000000000]`, `[1000000000000000,1000000000000000]`},
		{"exact int64 digits", `[9007199254740993, 9007199254740993.000, 90071992547409930e-1]`,
			`[9007199254740993,9007199254740993,9007199254740993]`},
		{"int64 bounds", `[9223372036854775807, -9223372036854775808]`, `[9223372036854775807,-9223372036854775808]`},
		{"beyond int64", `[12345678901234567890, 1.234567890123456789e19]`, `[1.2345678901234567e+19,1.2345678901234567e+19]`},
		{"huge", `[1e300, 1E300]`, `[1e+300,1e+300]`},
		{"fractions", `[0.5, 5e-1, 1.50, -2.25e0]`, `[0.5,0.5,1.5,-2.25]`},
		{"tiny underflows to zero", `1e-400`, `0`},
		{"no HTML escaping", `"<a href='x'>&</a>"`, `"<a href='x'>&</a>"`},
		{"escapes normalized", `"\u0041\/\t"`, `"A/\t"`},
		{"duplicate keys keep the last", `{"a":1,"a":2}`, `{"a":2}`},
		{"scalar", `"x"`, `"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := canonjson.Transform([]byte(tt.in))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestTransformRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `   `, `{`, `{} }`, `[] ]`, `{}{}`, `1 2`, `nul`, `1e400`, `-1e400`, `{"a":1,}`} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			_, err := canonjson.Transform([]byte(in))
			require.Error(t, err)
		})
	}
}

func TestMarshalMatchesTransform(t *testing.T) {
	t.Parallel()
	in := []byte(`{"n":[1,2.5,1e21,-3],"s":"é","o":{"b":true,"a":null}}`)
	var v any
	require.NoError(t, json.Unmarshal(in, &v))
	fromFloats, err := canonjson.Marshal(v)
	require.NoError(t, err)
	fromRaw, err := canonjson.Transform(in)
	require.NoError(t, err)
	require.Equal(t, string(fromRaw), string(fromFloats))
}

// FuzzTransform checks that the canonical form is a fixed point and means the same
// document as its input.
func FuzzTransform(f *testing.F) {
	for _, seed := range []string{`{"b":1,"a":[1.0,"x",null]}`, `1e15`, `-0.0`, `"\u00e9"`,
		`[9007199254740993, 1e-7, 123456789012345678901234567890]`, `{"a":{"a":{"a":{}}}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		canon, err := canonjson.Transform(raw)
		if err != nil {
			return
		}
		again, err := canonjson.Transform(canon)
		require.NoError(t, err)
		require.Equal(t, string(canon), string(again))
		var want, got any
		require.NoError(t, json.Unmarshal(raw, &want))
		require.NoError(t, json.Unmarshal(canon, &got))
		require.Equal(t, want, got)
	})
}
