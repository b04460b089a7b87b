package expression

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// Env is what expressions see. Its keys:
//
//   - "input": the run input;
//   - "steps": map[string]any from step ID to map[string]any{"output": …, "conflict": …};
//   - "run": map[string]any with "id", "workflow", "version", "environment";
//   - "step": map[string]any with "id", "stepId", "attempt".
//
// Values are JSON values as encoding/json decodes them, with or without UseNumber.
type Env map[string]any

// maxExactInt is the largest integer a float64 holds exactly.
const maxExactInt = 1 << 53

// exprValues returns env with every json.Number turned into an int or a float64, which expr
// can compute with. Parts holding no json.Number are shared, not copied.
func (e Env) exprValues() map[string]any {
	out, _ := numbersIn(map[string]any(e))
	m, _ := out.(map[string]any)
	return m
}

// numbersIn converts json.Number values inside v; changed says whether v was copied.
func numbersIn(v any) (out any, changed bool) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil && int64(int(i)) == i {
			return int(i), true
		}
		if f, err := x.Float64(); err == nil {
			return f, true
		}
		return v, false
	case map[string]any:
		return numbersInMap(x)
	case []any:
		return numbersInSlice(x)
	default:
		return v, false
	}
}

func numbersInMap(m map[string]any) (any, bool) {
	var out map[string]any
	for k, e := range m {
		conv, changed := numbersIn(e)
		if !changed {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(m))
			for k2, e2 := range m {
				out[k2] = e2
			}
		}
		out[k] = conv
	}
	if out == nil {
		return m, false
	}
	return out, true
}

func numbersInSlice(s []any) (any, bool) {
	var out []any
	for i, e := range s {
		conv, changed := numbersIn(e)
		if !changed {
			continue
		}
		if out == nil {
			out = append([]any(nil), s...)
		}
		out[i] = conv
	}
	if out == nil {
		return s, false
	}
	return out, true
}

// toJSON turns an expr result into a plain JSON value: nil, bool, string, float64 (integers
// beyond ±2^53 become json.Number to keep their digits), []any and map[string]any. Times
// become RFC 3339 strings and durations Go duration strings.
func toJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, json.Number:
		return x, nil
	case float64:
		return finite(x)
	case int:
		return fromInt(int64(x)), nil
	case int64:
		return fromInt(x), nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case time.Duration:
		return x.String(), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := toJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		return sliceToJSON(len(x), func(i int) any { return x[i] })
	}
	return reflectToJSON(reflect.ValueOf(v))
}

// reflectToJSON handles the typed values expr builtins produce ([]int, []string, map[any]any…).
func reflectToJSON(v reflect.Value) (any, error) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fromInt(v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := v.Uint(); u > math.MaxInt64 {
			return json.Number(strconv.FormatUint(u, 10)), nil
		}
		return fromInt(int64(v.Uint())), nil
	case reflect.Float32, reflect.Float64:
		return finite(v.Float())
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Slice, reflect.Array:
		return sliceToJSON(v.Len(), func(i int) any { return v.Index(i).Interface() })
	case reflect.Map:
		return mapToJSON(v)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return toJSON(v.Elem().Interface())
	}
	return nil, fmt.Errorf("a value of type %s is not JSON", v.Type())
}

func sliceToJSON(n int, at func(int) any) (any, error) {
	out := make([]any, n)
	for i := range out {
		c, err := toJSON(at(i))
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

func mapToJSON(v reflect.Value) (any, error) {
	out := make(map[string]any, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		c, err := toJSON(iter.Value().Interface())
		if err != nil {
			return nil, err
		}
		out[fmt.Sprint(iter.Key().Interface())] = c
	}
	return out, nil
}

func fromInt(i int64) any {
	if i >= -maxExactInt && i <= maxExactInt {
		return float64(i)
	}
	return json.Number(strconv.FormatInt(i, 10))
}

func finite(f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a JSON number", f)
	}
	return f, nil
}

// Truthy reports whether v counts as true for a step's if: null, false, 0 and "" are false,
// everything else (including empty arrays and objects) is true.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint() != 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() != 0
	}
	return true
}
