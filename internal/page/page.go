// Package page holds the page sizes every list shares: REST, the stores and the CLI.
package page

// Page sizes of every list (documented in README, "Limits").
const (
	// DefaultLimit is the page size of a list that asks for none.
	DefaultLimit = 100
	// MaxLimit is the largest page a list may ask for.
	MaxLimit = 1000
)

// Clamp returns the page size to use for a requested n: DefaultLimit when n ≤ 0, at most
// MaxLimit.
func Clamp(n int) int {
	if n <= 0 {
		return DefaultLimit
	}
	return min(n, MaxLimit)
}
