// Package docgen keeps the generated parts of docs/ in step with the code: a page holds
// prose of its own and one region between Begin and End that a test writes from the code
// (the REST route table, the command tree). Check fails the test when the region differs
// from what the code generates; with update it rewrites the region instead. Compare does
// the same for a whole page the code rewrites in places (limits.md, whose values a test
// writes from the constants its rows name). Its own tests check the pages' links and that
// the README stays short.
package docgen

// Refresh every generated part of docs/ (docs/README.md, "What is checked").
//go:generate go test -count=1 -run TestRESTDoc ../../api/ -update
//go:generate go test -count=1 -run TestCLIDoc ../../cmd/gorunner/ -update
//go:generate go test -count=1 -run TestLimitsTable ../limitsdoc/ -update

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Begin and End delimit a page's generated region; nothing between them is written by hand.
const (
	Begin = "<!-- BEGIN GENERATED: do not edit; refresh with the command in docs/README.md -->"
	End   = "<!-- END GENERATED -->"
)

// Check compares the generated region of the page at path with generated. With update set
// it rewrites the region (the prose around it is kept) and passes.
func Check(t testing.TB, path, generated string, update bool) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	page := string(raw)
	head, rest, ok := strings.Cut(page, Begin+"\n")
	require.True(t, ok, "%s has no line %q", path, Begin)
	_, tail, ok := strings.Cut(rest, End)
	require.True(t, ok, "%s has no line %q after its Begin", path, End)
	Compare(t, path, page, head+Begin+"\n"+generated+End+tail, update)
}

// Compare fails the test when page, the text of the file at path, is not want, what the
// code generates for it; with update it writes want to path instead.
func Compare(t testing.TB, path, page, want string, update bool) {
	t.Helper()
	if update {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, page, "%s differs from what the code generates: refresh it with -update (docs/README.md)", path)
}

// Cell makes s safe inside a Markdown table cell: pipes escaped, newlines as spaces.
func Cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(s), "|", `\|`), "\n", " ")
}
