// Package safetext says which characters text from outside GoRunner must not carry raw to
// a person: the CLI spells them out on a terminal, the OAuth consent page refuses a client
// name holding one.
package safetext

import "unicode"

// Unsafe reports a control character (escape sequences, bell, carriage return, C1
// controls) or a bidirectional formatting character: shown raw, either can hide, reorder
// or rewrite the text around it, and on a terminal drive the terminal itself.
func Unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}
