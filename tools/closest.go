package tools

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gorunner/gorunner/runner"
)

// MaxSuggestions is how many names a miss suggests at most.
const MaxSuggestions = 3

// Closest are the candidates nearest to name by edit distance (Levenshtein, ignoring case),
// nearest first, ties by name: at most MaxSuggestions, and only those within half the
// name's length (at least 2 edits), so that a far-off name suggests nothing. The distance
// is at least the difference in length, so a candidate whose length is further off than
// the limit is skipped uncompared: a hostile name of a megabyte costs one pass over it,
// not one table of a megabyte's width per candidate.
func Closest(name string, candidates []string) []string {
	rn := []rune(strings.ToLower(name))
	limit := max(2, len(rn)/2)
	type near struct {
		name string
		d    int
	}
	var found []near
	for _, c := range candidates {
		rc := []rune(strings.ToLower(c))
		if abs(len(rn)-len(rc)) > limit {
			continue
		}
		if d := distance(rn, rc); d <= limit {
			found = append(found, near{c, d})
		}
	}
	slices.SortFunc(found, func(a, b near) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.name, b.name)) })
	out := make([]string, 0, MaxSuggestions)
	for _, f := range found[:min(len(found), MaxSuggestions)] {
		out = append(out, f.name)
	}
	return out
}

// abs is |n|.
func abs(n int) int { return max(n, -n) }

// distance is the Levenshtein distance between ra and rb.
func distance(ra, rb []rune) int {
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Unknown is the isError answer to a call of a name that is not a tool this session may
// call: it names the closest tools it may call, or says where to look. what is "tool" or
// "workflow"; search says the session finds workflows with gorunner_find_workflows.
func Unknown(what, name string, closest []string, search bool) *mcp.CallToolResult {
	msg := fmt.Sprintf("there is no %s named %q", what, name)
	if len(closest) > 0 {
		msg += "; did you mean " + quoteList(closest) + "?"
	} else {
		msg += "."
	}
	switch {
	case search:
		msg += " Find workflows with " + FindWorkflows + " {query} and run them with " + RunWorkflow + " {workflow, arguments}."
	default:
		msg += " Call one of the tools tools/list gives."
	}
	return Problem{Status: http.StatusNotFound, Code: runner.CodeNotFound, Message: msg}.Result()
}

// quoteList is "a", "b" or "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
