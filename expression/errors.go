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
	return fmt.Sprintf("evaluating ${{%s}}: %s", shorten(e.Expr), cut(e.Err.Error(), maxErrText))
}

// Unwrap returns the underlying error.
func (e *EvalError) Unwrap() error { return e.Err }

const (
	// shortExpr is how many bytes of an expression an error message quotes.
	shortExpr = 120
	// maxErrText is how many bytes of the underlying error an EvalError quotes: a builtin's
	// error may hold a whole (large) argument.
	maxErrText = 500
)

// shorten keeps error messages readable when an expression is long.
func shorten(src string) string { return cut(src, shortExpr) }

// cut keeps the first n bytes of s (whole runes), marking the cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
