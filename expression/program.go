package expression

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// Limits that keep every expression cheap to compile and to run.
const (
	// MaxExpressionLength is the longest expression source accepted, in bytes.
	MaxExpressionLength = 4 << 10
	// MaxNodes is the largest syntax tree accepted for one expression.
	MaxNodes = 1000
	// MemoryBudget is expr's own bound on what one expression may allocate, in its units
	// (roughly one per element of a built collection or byte of a built string): a second
	// line behind MaxValueBytes and MaxWorkBytes, which are checked before allocating.
	MemoryBudget = MaxWorkBytes
)

// envType is the shape expressions are checked against: a typo such as steps.x.ouptut or
// run.name is a compile error, while the contents of input and of outputs stay open.
var envType = types.Map{
	"input": types.Any,
	"steps": types.Map{
		types.Extra: types.Map{"output": types.Any, "conflict": types.Any, "error": types.Any},
	},
	"run": types.Map{
		"id": types.Any, "workflow": types.Any, "version": types.Any, "environment": types.Any,
		"error": types.Any,
	},
	"step":    types.Map{"id": types.Any, "stepId": types.Any, "attempt": types.Any},
	budgetVar: types.Any,
}

// envWith is envType with the variables names besides (a foreach iteration's item and
// index, a loop pass's iteration), whose contents stay open.
func envWith(names []string) types.Map {
	if len(names) == 0 {
		return envType
	}
	env := make(types.Map, len(envType)+len(names))
	for k, t := range envType {
		env[k] = t
	}
	for _, n := range names {
		env[n] = types.Any
	}
	return env
}

// program is one compiled expression: the source between "${{" and "}}".
type program struct {
	source string
	prog   *vm.Program
	refs   []string
}

// compileProgram compiles src. Member access is made nil-safe so that reading a missing key
// (a skipped step's output, an absent input property) yields nil instead of an error.
func compileProgram(src string, env types.Map) (*program, error) {
	if len(src) > MaxExpressionLength {
		return nil, fmt.Errorf("expression is %d bytes long; the limit is %d", len(src), MaxExpressionLength)
	}
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	for _, p := range literalPatterns(src) {
		if err := checkPattern(p); err != nil {
			return nil, err
		}
	}
	patch := &nilSafe{refs: map[string]bool{}}
	g := &guard{}
	opts := append([]expr.Option{
		expr.Env(env),
		expr.MaxNodes(MaxNodes),
		expr.DisableBuiltin("now"),
		expr.Patch(patch),
		expr.Patch(ordered{}),
		expr.Patch(g),
	}, guardFunctions...)
	prog, err := expr.Compile(src, opts...)
	if g.err != nil {
		return nil, g.err
	}
	if err != nil {
		return nil, describeCompileError(err)
	}
	refs := make([]string, 0, len(patch.refs))
	for id := range patch.refs {
		refs = append(refs, id)
	}
	slices.Sort(refs)
	return &program{source: src, prog: prog, refs: refs}, nil
}

// describeCompileError turns expr's multi-line error (with a source snippet) into one line.
func describeCompileError(err error) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fmt.Errorf("%s (column %d)", fe.Message, fe.Column+1)
	}
	return err
}

// run evaluates p against vals (an Env converted by exprValues, with the evaluation's
// budget) within MemoryBudget and the budget's limits.
func (p *program) run(vals map[string]any) (any, error) {
	b := vals[budgetVar].(*budget)
	machine := b.machine
	if machine == nil {
		machine = &vm.VM{}
	}
	machine.MemoryBudget = MemoryBudget
	out, err := machine.Run(p.prog, vals)
	if err != nil {
		return nil, &EvalError{Expr: p.source, Err: runError(err)}
	}
	v, err := newConverter(b).value(out)
	if err != nil {
		return nil, &EvalError{Expr: p.source, Err: err}
	}
	return v, nil
}

// runError turns what the VM reports into one line; limits stay ErrLimit.
func runError(err error) error {
	var fe *file.Error
	switch {
	case !errors.As(err, &fe):
		return err
	case errors.Is(err, ErrLimit):
		return fe.Unwrap()
	case fe.Message == vmMemoryError:
		return limitError("expr's memory budget of %d exceeded", MemoryBudget)
	}
	return errors.New(fe.Message)
}

// vmMemoryError is how expr reports going over MemoryBudget.
const vmMemoryError = "memory budget exceeded"

// nilSafe is an expr patcher: it marks every property access optional (a?.b) inside a chain
// and records the step IDs read as steps.<id> or steps["<id>"].
type nilSafe struct {
	refs map[string]bool
}

// Visit implements ast.Visitor.
func (n *nilSafe) Visit(node *ast.Node) {
	member, ok := (*node).(*ast.MemberNode)
	if !ok || member.Method {
		return
	}
	base, isIdent := member.Node.(*ast.IdentifierNode)
	if isIdent && base.Value == "$env" {
		return
	}
	if isIdent && base.Value == "steps" {
		if prop, ok := member.Property.(*ast.StringNode); ok {
			n.refs[prop.Value] = true
		}
	}
	member.Optional = true
	ast.Patch(node, &ast.ChainNode{Node: member})
}
