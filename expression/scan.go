package expression

import (
	"fmt"
	"strings"
)

const (
	openDelim  = "${{"
	closeDelim = "}}"
)

// segment is one piece of a string: literal text, or the source of one expression.
type segment struct {
	text   string
	isExpr bool
	offset int // byte offset of the segment (of "${{" for an expression) in the string
}

// scan splits s into literal text and expressions. The end of an expression is the first
// "}}" outside string literals and outside braces, so ${{ {"a": {"b": 1}} }} and
// ${{ "}}" }} both work. A literal "${{" can be written as ${{ "${{" }}.
func scan(s string) ([]segment, *CompileError) {
	var segs []segment
	pos := 0
	for {
		start := strings.Index(s[pos:], openDelim)
		if start < 0 {
			break
		}
		start += pos
		if start > pos {
			segs = append(segs, segment{text: s[pos:start], offset: pos})
		}
		body := start + len(openDelim)
		end, err := exprEnd(s, body)
		if err != nil {
			return nil, &CompileError{Expr: s[body:], Offset: start, Err: err}
		}
		segs = append(segs, segment{text: s[body:end], isExpr: true, offset: start})
		pos = end + len(closeDelim)
	}
	if pos < len(s) {
		segs = append(segs, segment{text: s[pos:], offset: pos})
	}
	return segs, nil
}

// exprEnd returns the index of the "}}" that closes the expression starting at from.
func exprEnd(s string, from int) (int, error) {
	depth := 0
	for i := from; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			end := strings.IndexByte(s[i+1:], c)
			if c != '`' {
				end = quoteEnd(s[i+1:], c)
			}
			if end < 0 {
				return 0, fmt.Errorf("unterminated string literal")
			}
			i += end + 1
		case '{':
			depth++
		case '}':
			if depth == 0 && strings.HasPrefix(s[i:], closeDelim) {
				return i, nil
			}
			depth = max(depth-1, 0)
		}
	}
	return 0, fmt.Errorf("missing %q", closeDelim)
}

// quoteEnd returns the index in s of the quote q that ends a string literal, skipping
// backslash escapes, or -1.
func quoteEnd(s string, q byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i
		}
	}
	return -1
}
