// Package expression compiles and evaluates GoRunner's ${{ … }} expressions inside JSON
// values, on github.com/expr-lang/expr.
//
// A string that is exactly one expression ("${{ input.count }}") takes the type of the
// value; any other string holding expressions is interpolated, strings inserted as they are
// and other values written as JSON. Expressions see input, steps.<id>.output,
// steps.<id>.conflict, run and step (see Env). They cannot change anything: expr has no
// assignment or I/O, now() is disabled so a run's values depend only on its input and step
// outputs, and every expression is bounded in length (MaxExpressionLength) and size
// (MaxNodes). Every evaluation is bounded before it allocates: no value over MaxValueBytes,
// no more than MaxWorkBytes built or walked, no longer than MaxEvalTime (see guard and
// budget); going over is an error matching ErrLimit. Reading a missing key gives null,
// never an error.
package expression

import (
	"encoding/json"
	"fmt"
	"github.com/expr-lang/expr/types"
	"reflect"
	"slices"
	"strings"
)

// Template is a compiled JSON value with expressions inside its strings.
type Template struct {
	root   node
	refs   []string
	static bool
}

// node is one compiled part of a JSON value.
type node interface {
	eval(vals map[string]any) (any, error)
}

// Compile compiles v, a JSON value as encoding/json decodes it (map[string]any, []any,
// string, float64, json.Number, bool or nil). Object keys are taken literally. An error is a
// *CompileError naming the expression and where it is.
func Compile(v any) (*Template, error) {
	return CompileWith(v)
}

// CompileWith is Compile for expressions that see the variables names besides Env's (a
// foreach iteration's item and index, a loop pass's iteration); Scope.SetVar sets them.
func CompileWith(v any, names ...string) (*Template, error) {
	c := compiler{refs: map[string]bool{}, env: envWith(names)}
	root, err := c.value(v, "")
	if err != nil {
		return nil, err
	}
	refs := make([]string, 0, len(c.refs))
	for id := range c.refs {
		refs = append(refs, id)
	}
	slices.Sort(refs)
	return &Template{root: root, refs: refs, static: c.exprs == 0}, nil
}

// Eval evaluates the template against env and returns a plain JSON value (see
// converter.value for how numbers come out). An error is an *EvalError; one that went over
// MaxValueBytes, MaxWorkBytes or MaxEvalTime (all the template's expressions together) also
// matches ErrLimit.
func (t *Template) Eval(env Env) (any, error) {
	return t.root.eval(env.exprValues(newBudget()))
}

// Refs returns the IDs of the steps the template reads as steps.<id> or steps["<id>"],
// sorted and without repeats. Computed accesses such as steps[input.name] are not listed.
func (t *Template) Refs() []string {
	return slices.Clone(t.refs)
}

// Static reports whether the template holds no expression, so Eval always gives its value.
func (t *Template) Static() bool {
	return t.static
}

// compiler builds the node tree and collects what Template reports.
type compiler struct {
	refs  map[string]bool
	exprs int
	env   types.Map // what expressions may name
}

func (c *compiler) value(v any, path string) (node, error) {
	switch x := v.(type) {
	case string:
		return c.str(x, path)
	case map[string]any:
		return c.object(x, path)
	case []any:
		items := make(arrayNode, len(x))
		for i, e := range x {
			n, err := c.value(e, fmt.Sprintf("%s/%d", path, i))
			if err != nil {
				return nil, err
			}
			items[i] = n
		}
		return items, nil
	case nil, bool, float64, json.Number:
		return constNode{x}, nil
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32:
		return constNode{v}, nil
	}
	return nil, &CompileError{Path: path, Err: fmt.Errorf("a value of type %T is not JSON", v)}
}

func (c *compiler) object(m map[string]any, path string) (node, error) {
	obj := objectNode{keys: make([]string, 0, len(m))}
	for k := range m {
		obj.keys = append(obj.keys, k)
	}
	slices.Sort(obj.keys)
	obj.vals = make([]node, len(obj.keys))
	for i, k := range obj.keys {
		n, err := c.value(m[k], path+"/"+escapePointer(k))
		if err != nil {
			return nil, err
		}
		obj.vals[i] = n
	}
	return obj, nil
}

func (c *compiler) str(s, path string) (node, error) {
	segs, serr := scan(s)
	if serr != nil {
		serr.Path = path
		return nil, serr
	}
	parts := make(interpNode, len(segs))
	for i, seg := range segs {
		if !seg.isExpr {
			parts[i] = textPart(seg.text)
			continue
		}
		p, err := compileProgram(seg.text, c.env)
		if err != nil {
			return nil, &CompileError{Path: path, Expr: seg.text, Offset: seg.offset, Err: err}
		}
		c.exprs++
		for _, id := range p.refs {
			c.refs[id] = true
		}
		parts[i] = p
	}
	switch {
	case len(parts) == 0:
		return constNode{""}, nil
	case len(parts) == 1:
		return parts[0], nil
	}
	return parts, nil
}

// escapePointer escapes one JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

type constNode struct{ v any }

func (n constNode) eval(map[string]any) (any, error) { return n.v, nil }

type textPart string

func (t textPart) eval(map[string]any) (any, error) { return string(t), nil }

func (p *program) eval(vals map[string]any) (any, error) { return p.run(vals) }

type arrayNode []node

func (a arrayNode) eval(vals map[string]any) (any, error) {
	out := make([]any, len(a))
	for i, n := range a {
		v, err := n.eval(vals)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

type objectNode struct {
	keys []string
	vals []node
}

func (o objectNode) eval(vals map[string]any) (any, error) {
	out := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		v, err := o.vals[i].eval(vals)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// interpNode is a string mixing text and expressions; values that are not strings are
// written as JSON.
type interpNode []node

func (in interpNode) eval(vals map[string]any) (any, error) {
	var b strings.Builder
	for _, n := range in {
		v, err := n.eval(vals)
		if err != nil {
			return nil, err
		}
		s, ok := v.(string)
		if !ok {
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			s = string(enc)
		}
		if b.Len()+len(s) > MaxValueBytes {
			return nil, &EvalError{Expr: in.source(), Err: limitError("the string would be over %d bytes", MaxValueBytes)}
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// source is the interpolated string's first expression, for errors about the whole string.
func (in interpNode) source() string {
	for _, n := range in {
		if p, ok := n.(*program); ok {
			return p.source
		}
	}
	return ""
}
