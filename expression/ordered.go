package expression

import "github.com/expr-lang/expr/ast"

// ordered is an expr patcher that makes the builtins reading a map's entries give them in
// key order: keys(m) becomes sort(keys(m)), toPairs(m) sortBy(toPairs(m), #[0]) and
// values(m) map(sortBy(toPairs(m), #[0]), #[1]). expr reads them in Go's map order, which
// changes from one evaluation to the next, and a run's results must not: a step evaluated
// again after a crash must give what it gave before. It runs before the guard, which then
// charges the sort for its comparisons (budget.sorting). expr walks the tree once, children
// first, so a node it puts in place is not visited again.
type ordered struct{}

// Visit implements ast.Visitor.
func (ordered) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BuiltinNode)
	if !ok || len(n.Arguments) != 1 {
		return
	}
	byKey := func(pairs ast.Node) ast.Node {
		return &ast.BuiltinNode{Name: "sortBy", Arguments: []ast.Node{pairs, &ast.PredicateNode{Node: pairMember(0)}}}
	}
	switch n.Name {
	case "keys":
		ast.Patch(node, &ast.BuiltinNode{Name: "sort", Arguments: []ast.Node{n}})
	case "toPairs":
		ast.Patch(node, byKey(n))
	case "values":
		pairs := &ast.BuiltinNode{Name: "toPairs", Arguments: n.Arguments}
		ast.Patch(node, &ast.BuiltinNode{Name: "map", Arguments: []ast.Node{byKey(pairs), &ast.PredicateNode{Node: pairMember(1)}}})
	}
}

// pairMember is #[i], the key (0) or value (1) of the pair a predicate is given.
func pairMember(i int) ast.Node {
	return &ast.MemberNode{Node: &ast.PointerNode{}, Property: &ast.IntegerNode{Value: i}}
}
