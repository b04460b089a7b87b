package expression

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
)

// AppendJSON appends to dst what json.Marshal gives for v, byte for byte, and true, when v
// is one of the plain JSON values Eval returns (nil, bool, string, finite float64, []any,
// map[string]any; keys sorted, <, > and & escaped as json.Marshal does); false, with dst
// unchanged, for anything else (json.Number included), for the caller to use json.Marshal.
// It spares encoding/json's reflection over the values a run's steps produce.
func AppendJSON(dst []byte, v any) ([]byte, bool) {
	out, ok := appendJSON(dst, v, 0)
	if !ok {
		return dst, false
	}
	return out, true
}

func appendJSON(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxDecodedDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		return appendString(b, x), true
	case float64:
		return appendFloat(b, x)
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSON(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		return appendObject(b, x, depth)
	}
	return b, false
}

func appendObject(b []byte, m map[string]any, depth int) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendJSON(b, m[k], depth+1); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendFloat writes f as encoding/json does: strconv's shortest form, an exponent only
// below 1e-6 or from 1e21, and e-07 written e-7.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendString writes s quoted. A string of printable ASCII needing no escape is written as
// it is; any other is left to encoding/json (its escapes, invalid UTF-8, U+2028…).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
