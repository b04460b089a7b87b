package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newTokenCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke API tokens"}
	cmd.AddCommand(&cobra.Command{
		Use:     "create NAME",
		Short:   "Create a token and print it alone on one line (it is shown once)",
		Example: "  export GORUNNER_TOKEN=$(gorunner token create ci)",
		Args:    cobra.ExactArgs(1),
		RunE: withApp(g, func(cmd *cobra.Command, args []string, a *app) error {
			_, secret, err := a.auth.Create(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			return nil
		}),
	}, &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: withApp(g, func(cmd *cobra.Command, _ []string, a *app) error {
			list, err := a.auth.List(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tCREATED")
			for _, t := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.ID, t.Name, t.CreatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		}),
	}, &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token; the next request with it is refused",
		Args:  cobra.ExactArgs(1),
		RunE: withApp(g, func(cmd *cobra.Command, args []string, a *app) error {
			return a.auth.Revoke(cmd.Context(), args[0])
		}),
	})
	return cmd
}

// withApp opens the store for a command and closes it after.
func withApp(g *globals, fn func(*cobra.Command, []string, *app) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a, err := openApp(cmd.Context(), g)
		if err != nil {
			return err
		}
		defer a.Close()
		return fn(cmd, args, a)
	}
}
