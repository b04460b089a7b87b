package main

import (
	"fmt"
	"strings"

	"github.com/gorunner/gorunner/internal/safetext"
)

// printable is text from the server (a run's error message, a hook token, an output, a
// title, a token name), made safe to write to a terminal: control characters (escape
// sequences, bell, carriage return, C1 controls) and bidirectional overrides are spelled
// out as \u001b and the like. Such text comes from workflow inputs, remote services or
// unauthenticated OAuth registrations; written raw it could rewrite the screen, retitle
// the window or set the clipboard (OSC 52) of the person reading it.
func printable(s string) string {
	if !strings.ContainsFunc(s, safetext.Unsafe) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if safetext.Unsafe(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// errorText is err's text for the terminal: it may quote the server, so each line is
// printable, but the line breaks between the errors errors.Join put together stay.
func errorText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}
