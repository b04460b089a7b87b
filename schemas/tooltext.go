package schemas

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gorunner/gorunner/internal/safetext"
)

// Lengths of the texts a definition shows as a tool, in characters: its title and
// description, and every title and description in its input and output schemas (and in
// its hooks' ask schemas, shown to the person). A tool list carries them all to every
// agent, so a definition may not make it as large as it likes.
const (
	// MaxTitleLength bounds a title.
	MaxTitleLength = 200
	// MaxDescriptionLength bounds a description.
	MaxDescriptionLength = 10_000
)

// maxTextLength is the bound of the text called key: a title or a description.
func maxTextLength(key string) int {
	if key == "title" {
		return MaxTitleLength
	}
	return MaxDescriptionLength
}

// What a definition shows an agent as an MCP tool — its title, description, the titles and
// descriptions in its schemas, its annotations — must say what the workflow is, no more:
// no control characters that hide text from a person reviewing it, no hint less cautious
// than its steps.

// badTextRune returns the first character of s that safetext.Unsafe refuses, other than the
// line breaks and tabs a description is laid out with, and whether there is one.
func badTextRune(s string) (rune, bool) {
	for _, r := range s {
		if r != '\n' && r != '\t' && safetext.Unsafe(r) {
			return r, true
		}
	}
	return 0, false
}

// text reports a tool text, a title or a description (key), that is longer than its
// bound or holds a character badTextRune refuses.
func (v *validator) text(path, key, s string) {
	if n, most := utf8.RuneCountInString(s), maxTextLength(key); n > most {
		v.add(path, "a %s may hold at most %d characters, got %d", key, most, n)
		return
	}
	if r, ok := badTextRune(s); ok {
		v.add(path, "must not contain control or bidirectional formatting characters (found %U)", r)
	}
}

// schemaTexts checks the title and description strings anywhere in the JSON Schema raw.
func (v *validator) schemaTexts(path string, raw json.RawMessage) {
	var doc any
	if json.Unmarshal(raw, &doc) == nil {
		v.walkTexts(path, doc)
	}
}

func (v *validator) walkTexts(path string, doc any) {
	switch x := doc.(type) {
	case map[string]any:
		for k, e := range x {
			p := path + "/" + escapePointer(k)
			if s, ok := e.(string); ok && (k == "title" || k == "description") {
				v.text(p, k, s)
				continue
			}
			v.walkTexts(p, e)
		}
	case []any:
		for i, e := range x {
			v.walkTexts(path+"/"+strconv.Itoa(i), e)
		}
	}
}

// annotations refuses hints that promise more than the steps keep: openWorld false with a
// step that reaches outside GoRunner, readOnly true with a step that may change something.
func (v *validator) annotations(d *Definition) {
	a := d.Annotations
	if a == nil {
		return
	}
	if a.OpenWorld != nil && !*a.OpenWorld {
		if i := slices.IndexFunc(d.Steps, reachesOut); i >= 0 {
			v.add("/annotations/openWorld", "openWorld cannot be false: step %q (%s) reaches outside GoRunner",
				d.Steps[i].ID, d.Steps[i].Kind())
		}
	}
	if a.ReadOnly != nil && *a.ReadOnly {
		if i := slices.IndexFunc(d.Steps, mayWrite); i >= 0 {
			v.add("/annotations/readOnly", "readOnly cannot be true: step %q (%s) may change something",
				d.Steps[i].ID, describeKind(&d.Steps[i]))
		}
	}
}

func describeKind(s *Step) string {
	if s.HTTP != nil && s.HTTP.Method != "" {
		return fmt.Sprintf("http %s", s.HTTP.Method)
	}
	return s.Kind()
}
