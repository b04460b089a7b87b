package expression

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/vm"
)

// Limits of one evaluation (one Template.Eval, all its expressions together). They are
// checked before anything is built, so a hostile expression or input fails with ErrLimit
// instead of taking the process's memory or a worker's time.
const (
	// MaxValueBytes is the largest value one operation (repeat, join, a range, "+"…) or one
	// evaluated expression may produce, counted as in valueSize.
	MaxValueBytes = 1 << 20
	// MaxWorkBytes bounds what one evaluation may build and walk in all: every value a
	// builtin or operator is about to make or read, and slotBytes per loop iteration.
	MaxWorkBytes = 10 << 20
	// MaxEvalTime bounds the wall time of one evaluation.
	MaxEvalTime = 100 * time.Millisecond
	// MaxValueDepth bounds how deep arrays and objects an expression produces, or toJSON,
	// string and flatten walk, may nest: a value 30,000 deep fits MaxValueBytes, but
	// encoding it recursed hundreds of MB of stack, and encoding/json refuses to decode it
	// (past 10,000), so a step producing it could not be saved.
	MaxValueDepth = 1000
)

// ErrLimit means an evaluation went over MaxValueBytes, MaxWorkBytes or MaxEvalTime. An
// *EvalError wrapping it matches it with errors.Is.
var ErrLimit = errors.New("expression limit exceeded")

// slotBytes is what one element of an array or one entry of a map counts for: the size of an
// interface value, which is what each element of a built collection costs at least.
const slotBytes = 16

// timeCheckEvery is how many charges go by between two looks at the clock.
const timeCheckEvery = 64

// budget is the account of one evaluation.
type budget struct {
	work     int
	charges  int
	deadline time.Time
	// machine, when set, is the VM to run the evaluation's programs on (a Scope's, reused);
	// else each program runs on a new one.
	machine *vm.VM
}

func newBudget() *budget {
	return &budget{deadline: time.Now().Add(MaxEvalTime)}
}

func limitError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrLimit, fmt.Sprintf(format, args...))
}

// charge accounts for n bytes of work about to be done, and looks at the clock now and then.
func (b *budget) charge(n int) error {
	if n < 0 || n > MaxWorkBytes-b.work {
		return limitError("more than %d bytes of work", MaxWorkBytes)
	}
	b.work += n
	b.charges++
	if b.charges%timeCheckEvery == 0 && time.Now().After(b.deadline) {
		return limitError("evaluation took longer than %s", MaxEvalTime)
	}
	return nil
}

// produce accounts for a value of size bytes about to be built.
func (b *budget) produce(size int) error {
	if size < 0 || size > MaxValueBytes {
		return limitError("the value would be over %d bytes", MaxValueBytes)
	}
	return b.charge(size)
}

// mulSize is a*b, or -1 when either is -1 (already too big) or the product overflows.
func mulSize(a, b int) int {
	if a < 0 || b < 0 || (a != 0 && b > math.MaxInt/a) {
		return -1
	}
	return a * b
}

// addSize is a+b, or -1 when either is -1 or the sum overflows.
func addSize(a, b int) int {
	if a < 0 || b < 0 || b > math.MaxInt-a {
		return -1
	}
	return a + b
}

// before checks what operation op (a builtin's name or an operator) is about to build or
// read from its arguments, before it does.
func (b *budget) before(op string, args []any) error {
	if len(args) < minArgs[op] {
		return nil // expr reports the missing arguments
	}
	if check, ok := exactChecks[op]; ok {
		return check(b, args)
	}
	if op == "matches" {
		if p, ok := args[1].(string); ok {
			if err := checkPattern(p); err != nil {
				return err
			}
		}
	}
	return b.read(op, args)
}

// exactChecks compute the size of what an operation makes from its arguments; the others
// are charged by read.
var exactChecks = map[string]func(*budget, []any) error{
	"repeat":     (*budget).repeat,
	"join":       (*budget).join,
	"replace":    (*budget).replace,
	"split":      (*budget).split,
	"splitAfter": (*budget).split,
	"..":         (*budget).rangeOf,
	"+":          (*budget).concat,
	"sort":       (*budget).sorting,
	"sortBy":     (*budget).sorting,
}

// read charges what an operation reads from its arguments, times its growth.
func (b *budget) read(op string, args []any) error {
	deep, factor := deepOps[op], growth[op]
	if factor == 0 {
		factor = 1
	}
	limit := (MaxWorkBytes - b.work) / factor
	total := 0
	for _, a := range args {
		n, ok := valueSize(a, deep, limit-total)
		if n == tooDeep {
			return limitError("%s would walk a value nested more than %d levels deep", op, MaxValueDepth)
		}
		if !ok {
			return limitError("%s would work on more than %d bytes", op, limit)
		}
		total += n
	}
	return b.charge(total * factor)
}

// sorting charges a sort of the array args[0] for its n·log2(n) comparisons, slotBytes
// each: what it reads once would let a sort of a large array (keys of a large map, which
// the ordered patcher sorts) run many times MaxEvalTime, checked only between charges.
func (b *budget) sorting(args []any) error {
	size, ok := valueSize(args[0], false, MaxWorkBytes-b.work)
	if !ok {
		return limitError("sort would work on more than %d bytes", MaxWorkBytes-b.work)
	}
	return b.charge(mulSize(size, max(1, bits.Len(uint(size/slotBytes)))))
}

func (b *budget) rangeOf(args []any) error {
	lo, okLo := intArg(args[0])
	hi, okHi := intArg(args[1])
	if !okLo || !okHi || hi < lo {
		return nil
	}
	return b.produce(mulSize(slotBytes, rangeLen(lo, hi)))
}

// concat checks string "+"; "+" of other values makes nothing large.
func (b *budget) concat(args []any) error {
	s, okS := args[0].(string)
	t, okT := args[1].(string)
	if !okS || !okT {
		return nil
	}
	return b.produce(len(s) + len(t))
}

// minArgs are the arguments the exact checks of before read.
var minArgs = map[string]int{
	"repeat": 2, "join": 1, "sort": 1, "sortBy": 1, "replace": 3, "split": 2, "splitAfter": 2, "..": 2, "+": 2, "matches": 2,
}

// intArg is v as the int expr would make of it (a float is truncated, saturating).
func intArg(v any) (int, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int(min(rv.Uint(), math.MaxInt)), true
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		switch {
		case math.IsNaN(f):
			return 0, false
		case f >= math.MaxInt:
			return math.MaxInt, true
		case f <= math.MinInt:
			return math.MinInt, true
		}
		return int(f), true
	}
	return 0, false
}

// rangeLen is hi-lo+1 for hi >= lo, or -1 when that overflows an int.
func rangeLen(lo, hi int) int {
	if lo < 0 && hi > math.MaxInt+lo {
		return -1
	}
	return hi - lo + 1
}

func (b *budget) repeat(args []any) error {
	s, _ := args[0].(string)
	n, ok := intArg(args[1])
	if !ok || n < 0 {
		return nil
	}
	return b.produce(mulSize(len(s), n))
}

func (b *budget) join(args []any) error {
	glue := ""
	if len(args) == 2 {
		glue, _ = args[1].(string)
	}
	var n, size int
	switch items := args[0].(type) {
	case []string:
		n = len(items)
		for _, s := range items {
			size += len(s)
		}
	case []any:
		n = len(items)
		for _, e := range items {
			s, _ := e.(string)
			size += len(s)
		}
	}
	if err := b.charge(mulSize(n, slotBytes)); err != nil {
		return err
	}
	if n > 0 {
		size = addSize(size, mulSize(len(glue), n-1))
	}
	return b.produce(size)
}

func (b *budget) replace(args []any) error {
	s, _ := args[0].(string)
	old, _ := args[1].(string)
	repl, _ := args[2].(string)
	if err := b.charge(len(s)); err != nil {
		return err
	}
	n := strings.Count(s, old)
	if len(repl) <= len(old) {
		return b.produce(len(s))
	}
	return b.produce(addSize(len(s), mulSize(n, len(repl)-len(old))))
}

func (b *budget) split(args []any) error {
	s, _ := args[0].(string)
	sep, _ := args[1].(string)
	if err := b.charge(len(s)); err != nil {
		return err
	}
	n := strings.Count(s, sep) + 1
	if sep == "" {
		n = utf8.RuneCountInString(s)
	}
	if len(args) > 2 {
		if most, ok := intArg(args[2]); ok && most >= 0 {
			n = min(n, most)
		}
	}
	return b.produce(mulSize(n, slotBytes))
}

// maxPatternInsts bounds what a "matches" pattern compiles to, in regexp instructions of
// about 40 bytes each: Go allows 128 MB, which a 20-byte pattern of nested repeats reaches.
const maxPatternInsts = 1 << 14

// checkPattern refuses a regular expression that would compile to more than
// maxPatternInsts instructions; one that does not parse is left for regexp to report.
func checkPattern(pattern string) error {
	if len(pattern) > MaxExpressionLength {
		return limitError("a pattern is at most %d bytes", MaxExpressionLength)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	if n := patternInsts(re); n < 0 || n > maxPatternInsts {
		return limitError("the pattern would compile to more than %d instructions", maxPatternInsts)
	}
	return nil
}

// patternInsts estimates how many instructions re compiles to, or -1 past math.MaxInt.
func patternInsts(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpRepeat:
		n := re.Max
		if n < 0 {
			n = re.Min + 1
		}
		return addSize(1, mulSize(n, patternInsts(re.Sub[0])))
	}
	n := 1
	for _, sub := range re.Sub {
		n = addSize(n, patternInsts(sub))
	}
	return n
}

// growth is how many bytes of work per byte of argument an operation costs, when more than
// one: what it builds may be bigger than what it reads.
var growth = map[string]int{
	"toJSON":   6, // a string's bytes may each become \u00XX
	"fromJSON": 16,
	"string":   2,
	"upper":    2,
	"lower":    2,
	"toBase64": 2,
	"toPairs":  4,
	"uniq":     2,
	methodOp:   4, // a time's Format(layout) writes a few bytes per byte of layout
	"matches":  2,
}

// deepOps walk their argument all the way down (and would write a value shared n times n
// times), so their argument is measured deeply; other operations only read its top level.
var deepOps = map[string]bool{"toJSON": true, "string": true, "flatten": true}

// valueSize is what v counts for: the bytes of a string, slotBytes per element of an array
// or entry of a map, plus, when deep, what the elements count for. ok is false as soon as
// the size passes limit, so that measuring a value shared many times stays cheap; size is
// tooDeep when, deep, v nests arrays and objects more than MaxValueDepth levels.
func valueSize(v any, deep bool, limit int) (size int, ok bool) {
	m := measurer{deep: deep, limit: limit}
	m.add(v)
	if m.deeper {
		return tooDeep, false
	}
	return m.size, m.size >= 0 && m.size <= m.limit
}

// tooDeep is the size valueSize gives a value nested deeper than MaxValueDepth.
const tooDeep = -2

type measurer struct {
	deep  bool
	limit int
	size  int
	// depth is how many arrays and objects the value being measured is inside; deeper
	// says it passed MaxValueDepth.
	depth  int
	deeper bool
}

func (m *measurer) add(v any) {
	if m.size < 0 || m.size > m.limit || m.deeper {
		m.size = max(m.size, m.limit+1)
		return
	}

	switch x := v.(type) {
	case string:
		m.size = addSize(m.size, len(x))
	case []any:
		m.size = addSize(m.size, mulSize(len(x), slotBytes))
		if m.deep && m.enter() {
			for _, e := range x {
				m.add(e)
			}
			m.depth--
		}
	case map[string]any:
		m.size = addSize(m.size, mulSize(len(x), slotBytes))
		if m.deep && m.enter() {
			for k, e := range x {
				m.add(k)
				m.add(e)
			}
			m.depth--
		}
	default:
		m.addReflect(reflect.ValueOf(v))
	}
}

// enter goes into one more array or object, reporting false (and deeper) past
// MaxValueDepth; the caller that entered leaves with m.depth--.
func (m *measurer) enter() bool {
	if m.depth++; m.depth > MaxValueDepth {
		m.deeper = true
		m.depth--
		return false
	}
	return true
}

func (m *measurer) addReflect(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		m.size = addSize(m.size, v.Len())
	case reflect.Slice, reflect.Array, reflect.Map:
		m.size = addSize(m.size, mulSize(v.Len(), slotBytes))
		if !m.deep || !m.enter() {
			return
		}
		defer func() { m.depth-- }()
		if v.Kind() == reflect.Map {
			for it := v.MapRange(); it.Next() && m.size <= m.limit; {
				m.add(it.Key().Interface())
				m.add(it.Value().Interface())
			}
			return
		}
		for i := 0; i < v.Len() && m.size <= m.limit; i++ {
			m.add(v.Index(i).Interface())
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() && m.deep {
			m.add(v.Elem().Interface())
		}
	default:
		m.size = addSize(m.size, slotBytes)
	}
}
