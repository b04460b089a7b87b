package expression

import (
	"fmt"
	"unicode/utf8"
)

// CompileError is an expression that does not compile.
type CompileError struct {
	// Path is the JSON pointer of the string holding the expression, within the compiled value.
	Path string
	// Expr is the expression's source, without ${{ }}.
	Expr string
	// Offset is the byte offset of the expression's "${{" in its string.
	Offset int
	// Err says what is wrong.
	Err error
}

// Error implements error.
func (e *CompileError) Error() string {
	if e.Path == "" {
		return e.Message()
	}
	return e.Path + ": " + e.Message()
}

// Message describes the error without its Path, for callers that report the path apart.
func (e *CompileError) Message() string {
	if e.Expr == "" {
		return fmt.Sprintf("invalid value: %v", e.Err)
	}
	return fmt.Sprintf("expression ${{%s}} at offset %d: %v", shorten(e.Expr), e.Offset, e.Err)
}

// Unwrap returns the underlying error.
func (e *CompileError) Unwrap() error { return e.Err }

// EvalError is an expression that failed while being evaluated.
type EvalError struct {
	// Expr is the expression's source, without ${{ }}.
	Expr string
	// Err says what went wrong.
	Err error
}

// Error implements error.
func (e *EvalError) Error() string {
	return fmt.Sprintf("evaluating ${{%s}}: %v", shorten(e.Expr), e.Err)
}

// Unwrap returns the underlying error.
func (e *EvalError) Unwrap() error { return e.Err }

// shortExpr is how many bytes of an expression an error message quotes.
const shortExpr = 120

// shorten keeps error messages readable when an expression is long.
func shorten(src string) string {
	if len(src) <= shortExpr {
		return src
	}
	cut := shortExpr
	for cut > 0 && !utf8.RuneStart(src[cut]) {
		cut--
	}
	return src[:cut] + "…"
}
