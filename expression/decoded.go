package expression

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxDecodedDepth bounds the nesting AsDecoded follows; deeper values are left to a real
// encoding and decoding (which has depth limits of its own).
const maxDecodedDepth = MaxValueDepth

// AsDecoded returns Values(d), where d is v encoded with encoding/json and decoded again
// with numbers kept exact (UseNumber), without encoding anything, and true. v must be one of
// the plain JSON values Eval returns (nil, bool, string, float64, json.Number, []any,
// map[string]any) and encode without error. It returns false, for the caller to encode and
// decode, for anything it cannot answer for that way: another type, a string or key that
// is not valid UTF-8 (the encoding would change it), nesting deeper than 1,000.
//
// So the value a step just produced, and encoded for its record, is what later expressions
// see, as after a restart that decodes the record: the same numbers as int or float64. The
// result may share the parts of v that need no change.
func AsDecoded(v any) (any, bool) {
	out, _, ok := decoded(v, 0)
	return out, ok
}

// decoded is AsDecoded; changed says whether v was copied.
func decoded(v any, depth int) (out any, changed, ok bool) {
	if depth > maxDecodedDepth {
		return nil, false, false
	}
	switch x := v.(type) {
	case nil, bool:
		return v, false, true
	case string:
		return v, false, utf8.ValidString(x)
	case float64:
		return decodedFloat(x)
	case json.Number:
		out, changed := numbersIn(x)
		return out, changed, true
	case []any:
		if x == nil {
			return nil, true, true // encoded as null
		}
		return decodedSlice(x, depth)
	case map[string]any:
		if x == nil {
			return nil, true, true
		}
		return decodedMap(x, depth)
	}
	return nil, false, false
}

// decodedFloat is what f becomes once encoded (strconv's shortest form, as encoding/json
// writes it) and turned back by Values: an int when that text is an integer that fits.
func decodedFloat(f float64) (any, bool, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false, false
	}
	abs := math.Abs(f)
	if f != math.Trunc(f) || abs >= 1e21 {
		return f, false, true // written with a fraction or an exponent: decoded as a float64
	}
	i := int64(f) // every integer this small is written with all its digits
	if abs > maxExactInt {
		var err error
		if i, err = strconv.ParseInt(strconv.FormatFloat(f, 'f', -1, 64), 10, 64); err != nil {
			return f, false, true
		}
	}
	if int64(int(i)) != i {
		return f, false, true
	}
	return int(i), true, true
}

func decodedSlice(s []any, depth int) (any, bool, bool) {
	return sliceOnChange(s, func(e any) (any, bool, bool) { return decoded(e, depth+1) })
}

func decodedMap(m map[string]any, depth int) (any, bool, bool) {
	return mapOnChange(m, func(k string, e any) (any, bool, bool) {
		if !utf8.ValidString(k) {
			return nil, false, false
		}
		return decoded(e, depth+1)
	})
}
