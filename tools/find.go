package tools

import (
	"cmp"
	"encoding/json"
	"fmt"
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

// Bounds of gorunner_find_workflows' query, so that a call's work is bounded: it compares
// at most MaxQueryWords words with each workflow's, and each comparison is binary searches
// of the workflow's words (sorted once, when its tool is built), whatever the length of
// its description.
const (
	// MaxQueryLength bounds the query, in characters (its input schema's maxLength).
	MaxQueryLength = 1000
	// MaxQueryWords bounds the query's distinct words.
	MaxQueryWords = 20
)

// QueryWords are the distinct words of query (Words, each once, in their order), or the
// problem refusing it: no word, or more than MaxQueryWords.
func QueryWords(query string) ([]string, *schemas.Problem) {
	words := distinct(Words(query))
	switch {
	case len(words) == 0:
		return nil, &schemas.Problem{Path: "/query", Message: "the query has no words; send words from a workflow's name, title or description, e.g. \"invoice\""}
	case len(words) > MaxQueryWords:
		return nil, &schemas.Problem{Path: "/query", Message: fmt.Sprintf("the query has %d distinct words, at most %d are allowed; send the few words that matter", len(words), MaxQueryWords)}
	}
	return words, nil
}

// distinct is words without repeats, in their order.
func distinct(words []string) []string {
	seen := make(map[string]bool, len(words))
	out := words[:0]
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// terms are a workflow's words, lowercased, by field, and its tags as they are.
type terms struct {
	name, title, description, tagWords field
	tags                               []string
}

// field is a field's distinct words, sorted.
type field struct{ words []string }

func fieldOf(words []string) field {
	slices.Sort(words)
	return field{words: slices.Compact(words)}
}

func termsOf(def *schemas.Definition) terms {
	t := terms{name: fieldOf(Words(def.Name)), title: fieldOf(Words(def.Title)), description: fieldOf(Words(def.Description))}
	var tagWords []string
	for _, tag := range def.Tags {
		t.tags = append(t.tags, strings.ToLower(tag))
		tagWords = append(tagWords, Words(tag)...)
	}
	t.tagWords = fieldOf(tagWords)
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
		total += t.name.match(w, nameEqual, namePrefix) + t.tagWords.match(w, tagEqual, 0) +
			t.title.match(w, titleEqual, titlePrefix) + t.description.match(w, descEqual, descPrefix)
	}
	if total > 0 && strings.EqualFold(strings.TrimSpace(query), name) {
		total += nameBonus
	}
	return total
}

// match scores one query word against the field's words: its best match only, so that a
// word repeated in a description does not outweigh one in the title. It binary-searches
// the sorted words, so that its work grows with the log of their number: for w itself, for
// the first word after w (the words starting with w come first there), and for the words w
// starts with (see startsWith).
func (f field) match(w string, equal, prefix int) int {
	i, found := slices.BinarySearch(f.words, w)
	switch {
	case found:
		return equal
	case len(w) < minPrefix:
		return 0
	case i < len(f.words) && strings.HasPrefix(f.words[i], w):
		return prefix
	case startsWith(w, f.words[:i]):
		return prefix
	}
	return 0
}

// startsWith reports whether w starts with one of below, the sorted words before w, of
// minPrefix bytes or more. Such a word p sorts before w, and every word between the two
// starts with p: so the last of below shares with w at least p's length, which bounds the
// length of the p to look for; each look that fails lowers that bound.
func startsWith(w string, below []string) bool {
	for len(below) > 0 {
		n := commonPrefix(below[len(below)-1], w)
		if n < minPrefix {
			return false
		}
		j, found := slices.BinarySearch(below, w[:n])
		if found {
			return true
		}
		below = below[:j]
	}
	return false
}

// commonPrefix is how many leading bytes a and b share.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Find ranks workflow tools against a query: every tool with a positive score (and the tag,
// when one is given), best first, ties by name, at most limit.
// Past MaxQueryWords distinct words, the rest are not compared (QueryWords refuses such a
// query before).
func Find(all []*Tool, query, tag string, limit int) []Found {
	words := distinct(Words(query))
	words = words[:min(len(words), MaxQueryWords)]
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
