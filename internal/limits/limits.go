// Package limits holds the limits every face shares: REST, MCP, the stores and the CLI
// (documented in README, "Limits").
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
