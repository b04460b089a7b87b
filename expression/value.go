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
// can compute with, and b, the evaluation's budget. Parts holding no json.Number are shared,
// not copied.
func (e Env) exprValues(b *budget) map[string]any {
	out, _ := numbersIn(map[string]any(e))
	m, _ := out.(map[string]any)
	vals := make(map[string]any, len(m)+1)
	for k, v := range m {
		vals[k] = v
	}
	vals[budgetVar] = b
	return vals
}

// Values returns v (a decoded JSON value) with every json.Number turned into what an
// evaluation computes with, as Eval does to its Env. An Env built of such values costs each
// evaluation a walk and no copy: convert a run's input and step outputs once, not on every
// evaluation.
func Values(v any) any {
	out, _ := numbersIn(v)
	return out
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
	out, changed, _ := mapOnChange(m, func(_ string, e any) (any, bool, bool) {
		conv, changed := numbersIn(e)
		return conv, changed, true
	})
	return out, changed
}

func numbersInSlice(s []any) (any, bool) {
	out, changed, _ := sliceOnChange(s, func(e any) (any, bool, bool) {
		conv, changed := numbersIn(e)
		return conv, changed, true
	})
	return out, changed
}

// mapOnChange converts each value of m with conv, which reports whether it changed the
// value and whether it could convert it at all: m itself when conv changed nothing, else a
// copy holding the changed values; ok is false as soon as conv could not convert a value.
func mapOnChange(m map[string]any, conv func(k string, v any) (out any, changed, ok bool)) (out any, changed, ok bool) {
	var copied map[string]any
	for k, e := range m {
		c, changed, ok := conv(k, e)
		if !ok {
			return nil, false, false
		}
		if !changed {
			continue
		}
		if copied == nil {
			copied = make(map[string]any, len(m))
			for k2, e2 := range m {
				copied[k2] = e2
			}
		}
		copied[k] = c
	}
	if copied == nil {
		return m, false, true
	}
	return copied, true, true
}

// sliceOnChange is mapOnChange for a slice.
func sliceOnChange(s []any, conv func(v any) (out any, changed, ok bool)) (out any, changed, ok bool) {
	var copied []any
	for i, e := range s {
		c, changed, ok := conv(e)
		if !ok {
			return nil, false, false
		}
		if !changed {
			continue
		}
		if copied == nil {
			copied = append([]any(nil), s...)
		}
		copied[i] = c
	}
	if copied == nil {
		return s, false, true
	}
	return copied, true, true
}

// converter turns expr results into plain JSON values, accounting for what it builds: a
// value shared many times inside a result is written out as many times.
type converter struct {
	b    *budget
	size int
	// depth is how many arrays and objects the value being converted is inside.
	depth int
}

// nest enters one more array or object, refusing one nested deeper than MaxValueDepth; the
// caller leaves it with c.depth--.
func (c *converter) nest() error {
	if c.depth++; c.depth > MaxValueDepth {
		return limitError("the value would be nested more than %d levels deep", MaxValueDepth)
	}
	return nil
}

func newConverter(b *budget) *converter { return &converter{b: b} }

// grow accounts for n more bytes of the value being converted.
func (c *converter) grow(n int) error {
	c.size = addSize(c.size, n)
	if c.size < 0 || c.size > MaxValueBytes {
		return limitError("the value would be over %d bytes", MaxValueBytes)
	}
	return c.b.charge(n)
}

// value turns an expr result into a plain JSON value: nil, bool, string, float64 (integers
// beyond ±2^53 become json.Number to keep their digits), []any and map[string]any. Times
// become RFC 3339 strings and durations Go duration strings.
func (c *converter) value(v any) (any, error) {
	if s, ok := v.(string); ok {
		return s, c.grow(len(s))
	}
	if err := c.grow(slotBytes); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case nil, bool, json.Number:
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
		if err := c.grow(mulSize(len(x), slotBytes)); err != nil {
			return nil, err
		}
		if err := c.nest(); err != nil {
			return nil, err
		}
		defer func() { c.depth-- }()
		out := make(map[string]any, len(x))
		for k, e := range x {
			conv, err := c.entry(k, e)
			if err != nil {
				return nil, err
			}
			out[k] = conv
		}
		return out, nil
	case []any:
		return c.slice(len(x), func(i int) any { return x[i] })
	}
	return c.reflectValue(reflect.ValueOf(v))
}

// entry converts a map entry's value, counting its key.
func (c *converter) entry(k string, v any) (any, error) {
	if err := c.grow(len(k)); err != nil {
		return nil, err
	}
	return c.value(v)
}

// reflectValue handles the typed values expr builtins produce ([]int, []string, map[any]any…).
func (c *converter) reflectValue(v reflect.Value) (any, error) {
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
		return v.String(), c.grow(v.Len())
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Slice, reflect.Array:
		return c.slice(v.Len(), func(i int) any { return v.Index(i).Interface() })
	case reflect.Map:
		return c.mapValue(v)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return c.value(v.Elem().Interface())
	}
	return nil, fmt.Errorf("a value of type %s is not JSON", v.Type())
}

func (c *converter) slice(n int, at func(int) any) (any, error) {
	if err := c.grow(mulSize(n, slotBytes)); err != nil {
		return nil, err
	}
	if err := c.nest(); err != nil {
		return nil, err
	}
	defer func() { c.depth-- }()
	out := make([]any, n)
	for i := range out {
		conv, err := c.value(at(i))
		if err != nil {
			return nil, err
		}
		out[i] = conv
	}
	return out, nil
}

func (c *converter) mapValue(v reflect.Value) (any, error) {
	if err := c.grow(mulSize(v.Len(), slotBytes)); err != nil {
		return nil, err
	}
	if err := c.nest(); err != nil {
		return nil, err
	}
	defer func() { c.depth-- }()
	out := make(map[string]any, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		key := fmt.Sprint(iter.Key().Interface())
		conv, err := c.entry(key, iter.Value().Interface())
		if err != nil {
			return nil, err
		}
		out[key] = conv
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
