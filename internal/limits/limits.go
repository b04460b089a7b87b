// Package limits holds the limits every face shares: REST, MCP, the stores and the CLI
// (documented in docs/limits.md).
package limits

// MaxBodyBytes is the largest request body accepted (SPEC §3), over REST and MCP alike.
const MaxBodyBytes = 1 << 20

// Page sizes of every list.
const (
	// DefaultPage is the page size of a list that asks for none.
	DefaultPage = 100
	// MaxPage is the largest page a list may ask for.
	MaxPage = 1000
)

// Page returns the page size to use for a requested n: DefaultPage when n ≤ 0, at most
// MaxPage.
func Page(n int) int {
	if n <= 0 {
		return DefaultPage
	}
	return min(n, MaxPage)
}

// MaxRunsExamined is the most runs one page of a run list examines. A list filtered by what
// no index serves (completed runs in SQLite, an environment, a principal's readable runs
// among many) would otherwise walk any number of runs to fill one page; at the bound the
// page ends short, possibly empty, with a cursor after the last run examined.
const MaxRunsExamined = 10_000

// Examined returns how many runs a page may examine for a requested n: MaxRunsExamined
// when n ≤ 0, at most MaxRunsExamined.
func Examined(n int) int {
	if n <= 0 {
		return MaxRunsExamined
	}
	return min(n, MaxRunsExamined)
}
