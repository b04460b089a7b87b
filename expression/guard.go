package expression

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// Names the guard gives the nodes it adds. They hold a space, so that no expression can
// write them; $env, the one way to reach the environment by name, is refused.
const (
	budgetVar = "$gorunner budget"
	beforeFn  = "$gorunner before"
	tickFn    = "$gorunner tick"
	// methodOp names a method call for budget.before.
	methodOp = "method call"
)

// guardFunctions are the functions the guard's nodes call, with the evaluation's *budget as
// their first argument.
var guardFunctions = []expr.Option{
	expr.Function(beforeFn, func(args ...any) (any, error) {
		return nil, args[0].(*budget).before(args[1].(string), args[2:])
	}),
	expr.Function(tickFn, func(args ...any) (any, error) {
		return nil, args[0].(*budget).charge(slotBytes)
	}),
}

// predicateBuiltins loop over a collection; the guard charges each iteration.
var predicateBuiltins = map[string]bool{
	"all": true, "none": true, "any": true, "one": true, "filter": true, "map": true,
	"count": true, "sum": true, "find": true, "findIndex": true, "findLast": true,
	"findLastIndex": true, "groupBy": true, "sortBy": true, "reduce": true,
}

// cheapBuiltins do a bounded amount of work whatever their arguments; every other builtin is
// checked by budget.before.
var cheapBuiltins = map[string]bool{
	"len": true, "type": true, "abs": true, "ceil": true, "floor": true, "round": true,
	"int": true, "float": true, "first": true, "last": true, "get": true, "duration": true,
	"date": true, "timezone": true, "bitand": true, "bitor": true, "bitxor": true,
	"bitnand": true, "bitnot": true, "bitshl": true, "bitshr": true, "bitushr": true,
}

// guardedOperators can build or read values as large as their operands ("+" of two numbers
// cannot, and is left alone).
var guardedOperators = map[string]bool{
	"+": true, "..": true, "in": true, "matches": true, "contains": true,
	"startsWith": true, "endsWith": true,
}

// errEnv refuses $env: it would hand the guard's budget to the expression.
var errEnv = errors.New("$env is not available; use input, steps, run and step")

// guard is an expr patcher that makes every evaluation account for what it builds before
// building it. A builtin call f(a, b) or operation a + b that could build or read much
// becomes
//
//	let x = a; let y = b; before(budget, "f", x, y); f(x, y)
//
// so the arguments are evaluated once, in order, and keep their types (compile errors stay
// as they were), and a predicate's body p becomes tick(budget); p.
type guard struct {
	vars int
	err  error
}

// Visit implements ast.Visitor.
func (g *guard) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if n.Value == "$env" {
			g.err = errEnv
		}
	case *ast.PredicateNode:
		n.Node = &ast.SequenceNode{Nodes: []ast.Node{g.call(tickFn), n.Node}}
	case *ast.BuiltinNode:
		g.builtin(node, n)
	case *ast.CallNode:
		if _, ok := n.Callee.(*ast.MemberNode); ok && len(n.Arguments) > 0 {
			// A method of a value expr made, such as a time's Format(layout).
			g.hoist(node, methodOp, argPointers(n.Arguments))
		}
	case *ast.BinaryNode:
		if guardedOperators[n.Operator] && !(n.Operator == "+" && isNumber(n.Left) && isNumber(n.Right)) {
			g.hoist(node, n.Operator, []*ast.Node{&n.Left, &n.Right})
		}
	}
}

func (g *guard) builtin(node *ast.Node, n *ast.BuiltinNode) {
	switch {
	case n.Name == "sortBy" && len(n.Arguments) > 0:
		// Charged for its comparisons (budget.sorting) as well as its predicate's calls.
		g.hoist(node, n.Name, []*ast.Node{&n.Arguments[0]})
	case predicateBuiltins[n.Name]:
		if len(n.Arguments) == 1 {
			// count(xs) and sum(xs) loop without a predicate: give them one, to be charged.
			n.Arguments = append(n.Arguments, &ast.PredicateNode{
				Node: &ast.SequenceNode{Nodes: []ast.Node{g.call(tickFn), &ast.PointerNode{}}},
			})
		}
	case !cheapBuiltins[n.Name]:
		g.hoist(node, n.Name, argPointers(n.Arguments))
	}
}

func argPointers(args []ast.Node) []*ast.Node {
	ptrs := make([]*ast.Node, len(args))
	for i := range args {
		ptrs[i] = &args[i]
	}
	return ptrs
}

// literalPatterns returns the string literals written right of "matches" in src, which
// expr compiles while checking src, before any patcher runs.
func literalPatterns(src string) []string {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	var c patternCollector
	ast.Walk(&tree.Node, &c)
	return c.patterns
}

type patternCollector struct{ patterns []string }

// Visit implements ast.Visitor.
func (c *patternCollector) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BinaryNode); ok && b.Operator == "matches" {
		if s, ok := b.Right.(*ast.StringNode); ok {
			c.patterns = append(c.patterns, s.Value)
		}
	}
}

// hoist rewrites *node, an operation op on the nodes args point to, into lets binding the
// arguments, a call to before, and the operation on the bound variables.
func (g *guard) hoist(node *ast.Node, op string, args []*ast.Node) {
	values := make([]ast.Node, len(args))
	callArgs := []ast.Node{&ast.IdentifierNode{Value: budgetVar}, &ast.StringNode{Value: op}}
	for i, a := range args {
		values[i] = *a
		name := fmt.Sprintf("$gorunner arg %d", g.vars)
		g.vars++
		*a = &ast.IdentifierNode{Value: name}
		callArgs = append(callArgs, &ast.IdentifierNode{Value: name})
	}
	body := ast.Node(&ast.SequenceNode{Nodes: []ast.Node{
		&ast.CallNode{Callee: &ast.IdentifierNode{Value: beforeFn}, Arguments: callArgs},
		*node,
	}})
	for i := len(values) - 1; i >= 0; i-- {
		body = &ast.VariableDeclaratorNode{Name: callArgs[i+2].(*ast.IdentifierNode).Value, Value: values[i], Expr: body}
	}
	ast.Patch(node, body)
}

// call is a call of fn with the budget.
func (g *guard) call(fn string) ast.Node {
	return &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: fn},
		Arguments: []ast.Node{&ast.IdentifierNode{Value: budgetVar}},
	}
}

// isNumber reports whether the checker knows n to be a number.
func isNumber(n ast.Node) bool {
	switch n.Type().Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}
