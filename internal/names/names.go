// Package names is the one rule for the names GoRunner gives things (workflow names, step
// IDs, tags, connection names, the workflow of a narrowed scope), compiled once: every
// face and every package that checks a name asks Valid.
package names

import "regexp"

// Pattern is what a name must match: a lowercase letter or digit, then up to 63 of
// lowercase letters, digits, '_' and '-'.
const Pattern = `^[a-z0-9][a-z0-9_-]{0,63}$`

var pattern = regexp.MustCompile(Pattern)

// Valid reports whether s is a name (matches Pattern).
func Valid(s string) bool { return pattern.MatchString(s) }
