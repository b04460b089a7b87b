package main

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated region of docs/cli.md")

// TestCLIDoc: docs/cli.md describes the command tree as it is; -update rewrites it.
func TestCLIDoc(t *testing.T) {
	t.Parallel()
	docgen.Check(t, "../../docs/cli.md", cliDoc(newRootCommand()), *update)
}

// cliDoc renders every command under root, depth first in cobra's (sorted) order: its
// usage, what it does, its examples and its own flags, then the flags every command takes.
func cliDoc(root *cobra.Command) string {
	var b strings.Builder
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && c.IsAvailableCommand() {
			commandDoc(&b, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	fmt.Fprintf(&b, "### Flags of every command\n\n```\n%s```\n", root.PersistentFlags().FlagUsages())
	return b.String()
}

func commandDoc(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "### `%s`\n\n", c.CommandPath())
	about := c.Long
	if about == "" {
		about = c.Short
	}
	fmt.Fprintf(b, "%s\n\n```\n%s\n```\n\n", about, c.UseLine())
	if c.Example != "" {
		fmt.Fprintf(b, "Examples:\n\n```sh\n%s\n```\n\n", c.Example)
	}
	if flags := c.LocalFlags().FlagUsages(); flags != "" {
		fmt.Fprintf(b, "Flags:\n\n```\n%s```\n\n", flags)
	}
	if p := c.Parent(); p.HasParent() && p.HasPersistentFlags() {
		fmt.Fprintf(b, "It takes the flags of `%s` too.\n\n", p.CommandPath())
	}
}
