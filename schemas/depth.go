package schemas

import (
	"bytes"
	"fmt"
)

// checkYAMLDepth refuses a YAML document nested deeper than MaxDepth, from its bytes alone:
// yaml.v3 builds a node per level before anything could look at the depth, and a few KB
// nested thousands deep cost it hundreds of MB.
func checkYAMLDepth(data []byte) error {
	var s yamlDepth
	for n, line := range bytes.Split(data, []byte("\n")) {
		if s.line(line) > MaxDepth {
			return &DecodeError{Message: fmt.Sprintf("nested more than %d levels deep (line %d)", MaxDepth, n+1)}
		}
	}
	return nil
}

// yamlDepth follows the nesting of a YAML document line by line: block collections by their
// indentation (and "- " or "? " entries opening a collection on the same line), flow
// collections by their brackets outside quoted scalars and comments. It errs on the side of
// counting too deep (a flow collection written over indented lines counts its lines'
// indentation too), which only matters for documents near MaxDepth; nothing a document
// says can make it stop counting.
type yamlDepth struct {
	indents []int // columns of the open block collections
	flow    int   // open flow brackets
	// blockScalar is the indentation of the line that opened a literal or folded scalar
	// (| or >), whose more indented lines are text; -1 when none is open.
	blockScalar int
	inScalar    bool
}

// line reads one line and returns the depth reached on it.
func (s *yamlDepth) line(line []byte) int {
	indent := 0
	for indent < len(line) && line[indent] == ' ' {
		indent++
	}
	content := bytes.TrimRight(line[indent:], " \t\r")
	if s.inScalar {
		if len(content) == 0 || indent > s.blockScalar {
			return 0
		}
		s.inScalar = false
	}
	if len(content) == 0 || content[0] == '#' {
		return 0
	}
	for len(s.indents) > 0 && s.indents[len(s.indents)-1] >= indent {
		s.indents = s.indents[:len(s.indents)-1]
	}
	s.indents = append(s.indents, indent)
	for width := len(content); isEntry(content); {
		content = bytes.TrimLeft(content[1:], " ")
		s.indents = append(s.indents, indent+width-len(content))
	}
	deepest := s.scan(content)
	if s.flow == 0 && opensBlockScalar(content) {
		s.inScalar, s.blockScalar = true, indent
	}
	return deepest
}

// isEntry reports whether content starts with a "- " or "? " indicator.
func isEntry(content []byte) bool {
	if len(content) == 0 || (content[0] != '-' && content[0] != '?') {
		return false
	}
	return len(content) == 1 || content[1] == ' '
}

// scan follows the flow brackets of one line's content and returns the deepest level.
func (s *yamlDepth) scan(content []byte) int {
	deepest := len(s.indents) + s.flow
	prev := byte(' ') // the last character that is not a space; ' ' at the start
	for i := 0; i < len(content); i++ {
		c := content[i]
		switch {
		case c == '#' && (i == 0 || content[i-1] == ' ' || content[i-1] == '\t'):
			return deepest
		case (c == '"' || c == '\'') && startsNode(prev, s.flow):
			i = quotedEnd(content, i)
		case (c == '[' || c == '{') && (s.flow > 0 || startsNode(prev, 0)):
			s.flow++
			deepest = max(deepest, len(s.indents)+s.flow)
		case (c == ']' || c == '}') && s.flow > 0:
			s.flow--
		}
		if c != ' ' && c != '\t' {
			prev = c
		}
	}
	return deepest
}

// startsNode reports whether a quote or bracket after prev (the last non-space character)
// begins a node rather than sitting inside a plain scalar.
func startsNode(prev byte, flow int) bool {
	switch prev {
	case ' ', ':', '-', '?', '|', '>', '!', '&':
		return true
	case ',', '[', '{':
		return flow > 0
	}
	return false
}

// quotedEnd returns the index of the quote closing the scalar opened at i, or the last index
// of content when it goes on to the next line.
func quotedEnd(content []byte, i int) int {
	q := content[i]
	for j := i + 1; j < len(content); j++ {
		switch {
		case q == '"' && content[j] == '\\':
			j++
		case content[j] == q && q == '\'' && j+1 < len(content) && content[j+1] == '\'':
			j++
		case content[j] == q:
			return j
		}
	}
	return len(content) - 1
}

// opensBlockScalar reports whether content ends with a literal or folded scalar's header
// (| or >, with optional chomping and indentation indicators), a comment aside.
func opensBlockScalar(content []byte) bool {
	if i := bytes.Index(content, []byte(" #")); i >= 0 {
		content = bytes.TrimRight(content[:i], " \t")
	}
	content = bytes.TrimRight(content, "+-0123456789")
	return len(content) > 0 && (content[len(content)-1] == '|' || content[len(content)-1] == '>') &&
		(len(content) == 1 || content[len(content)-2] == ' ')
}
