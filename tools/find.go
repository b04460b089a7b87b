package tools

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/gorunner/gorunner/schemas"
)

// Found is one workflow gorunner_find_workflows answers with: what an agent needs to call
// it through gorunner_run_workflow.
type Found struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// FoundList is gorunner_find_workflows' structuredContent.
type FoundList struct {
	Workflows []Found `json:"workflows"`
}

// terms are a workflow's words, lowercased, by field, and its tags as they are.
type terms struct {
	name, title, description, tagWords []string
	tags                               []string
}

func termsOf(def *schemas.Definition) terms {
	t := terms{name: Words(def.Name), title: Words(def.Title), description: Words(def.Description)}
	for _, tag := range def.Tags {
		t.tags = append(t.tags, strings.ToLower(tag))
		t.tagWords = append(t.tagWords, Words(tag)...)
	}
	return t
}

// Words splits s into lowercase words: runs of letters and digits.
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Points a query word scores in each field: an equal word, or (for words of three letters
// or more) one word starting with the other ("greet" finds "greeting" and back). The whole
// query equal to the name scores nameBonus on top.
const (
	nameEqual, namePrefix   = 10, 6
	tagEqual                = 8
	titleEqual, titlePrefix = 6, 4
	descEqual, descPrefix   = 2, 1
	nameBonus               = 20
	minPrefix               = 3
)

// score is how well the query words match t; 0 is no match.
func (t *terms) score(words []string, query string, name string) int {
	total := 0
	for _, w := range words {
		total += match(w, t.name, nameEqual, namePrefix) + match(w, t.tagWords, tagEqual, 0) +
			match(w, t.title, titleEqual, titlePrefix) + match(w, t.description, descEqual, descPrefix)
	}
	if total > 0 && strings.EqualFold(strings.TrimSpace(query), name) {
		total += nameBonus
	}
	return total
}

// match scores one query word against a field's words: its best match only, so that a
// word repeated in a description does not outweigh one in the title.
func match(w string, field []string, equal, prefix int) int {
	best := 0
	for _, f := range field {
		switch {
		case f == w:
			return equal
		case len(w) >= minPrefix && len(f) >= minPrefix && (strings.HasPrefix(f, w) || strings.HasPrefix(w, f)):
			best = prefix
		}
	}
	return best
}

// Find ranks workflow tools against a query: every tool with a positive score (and the tag,
// when one is given), best first, ties by name, at most limit.
func Find(all []*Tool, query, tag string, limit int) []Found {
	words := Words(query)
	tag = strings.ToLower(tag)
	type scored struct {
		t     *Tool
		score int
	}
	var hits []scored
	for _, t := range all {
		if tag != "" && !slices.Contains(t.terms.tags, tag) {
			continue
		}
		if s := t.terms.score(words, query, t.Definition.Name); s > 0 {
			hits = append(hits, scored{t, s})
		}
	}
	slices.SortFunc(hits, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.t.Definition.Name, b.t.Definition.Name))
	})
	out := make([]Found, 0, min(len(hits), limit))
	for _, h := range hits[:min(len(hits), limit)] {
		d := h.t.Definition
		out = append(out, Found{Name: d.Name, Title: d.Title, Description: d.Description, InputSchema: d.Input})
	}
	return out
}
