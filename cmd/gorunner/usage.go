package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// markUsageErrors makes every mistake cobra finds on the command line (an unknown command
// or flag, a wrong number of arguments) exit with code 2 and a pointer to --help. Group
// commands answer an unknown subcommand with an error instead of their help.
func markUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError(fmt.Errorf("%w; see '%s --help'", err, cmd.CommandPath()))
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && c.Args == nil {
			c.Args = cobra.NoArgs
			if !c.Runnable() {
				c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
		}
		if validate := c.Args; validate != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := validate(cmd, args); err != nil {
					return usageError(fmt.Errorf("%w; see '%s --help'", err, cmd.CommandPath()))
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func newCompletionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script",
		Long: "Print the completion script for your shell. Workflow names complete from the server\n" +
			"(GORUNNER_URL, GORUNNER_TOKEN) when it can be reached.",
		Example: `  source <(gorunner completion bash)
  gorunner completion zsh > "${fpath[1]}/_gorunner"
  gorunner completion fish > ~/.config/fish/completions/gorunner.fish`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(out)
			}
		},
	}
	return cmd
}
