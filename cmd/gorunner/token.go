package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/oauth"
)

func newTokenCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke API tokens"}
	cmd.AddCommand(newTokenCreateCommand(g), &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: withApp(g, func(cmd *cobra.Command, _ []string, a *app) error {
			list, err := a.auth.List(cmd.Context())
			if err != nil {
				return err
			}
			rows := make([][]string, len(list))
			for i, t := range list {
				expires := "never"
				if t.ExpiresAt != nil {
					expires = t.ExpiresAt.Format(time.RFC3339)
				}
				rows[i] = []string{t.ID, t.Name, t.Scopes.String(), expires, t.CreatedAt.Format(time.RFC3339)}
			}
			p := &printer{out: cmd.OutOrStdout()}
			return p.table([]string{"ID", "NAME", "SCOPES", "EXPIRES", "CREATED"}, rows)
		}),
	}, &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token, and the OAuth grants it approved; the next request with any of them is refused",
		Args:  cobra.ExactArgs(1),
		RunE: withApp(g, func(cmd *cobra.Command, args []string, a *app) error {
			err := oauth.RevokeToken(cmd.Context(), a.store, a.auth, args[0])
			// Whatever it deleted (the token, some grants), running servers forget the
			// tokens they hold now rather than within auth.TokenCacheFor.
			a.tell(cmd.Context(), events.Tokens)
			return err
		}),
	})
	return cmd
}

func newTokenCreateCommand(g *globals) *cobra.Command {
	var scopes []string
	var expires time.Duration
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a token and print it alone on one line (it is shown once)",
		Example: "  export GORUNNER_TOKEN=$(gorunner token create ci)\n" +
			"  gorunner token create billing-agent --scope runs:write:tag=billing --scope runs:read:tag=billing --expires 720h",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := issueParams(args[0], scopes, expires, cmd.Flags().Changed("expires"))
			if err != nil {
				return err
			}
			return withApp(g, func(cmd *cobra.Command, _ []string, a *app) error {
				_, secret, err := a.auth.Issue(cmd.Context(), p)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), secret)
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().StringArrayVar(&scopes, "scope", nil, "a scope the token carries (repeatable): admin, workflows:write, runs:write, runs:read, runs:*:workflow=NAME, runs:*:tag=TAG (default admin)")
	cmd.Flags().DurationVar(&expires, "expires", 0, "the token's lifetime as a Go duration, e.g. 720h (default: never expires)")
	return cmd
}

// issueParams reads token create's command line (expiresSet: --expires was given). Every
// mistake in it is a usage error, found before the store is opened.
func issueParams(name string, scopes []string, expires time.Duration, expiresSet bool) (auth.IssueParams, error) {
	p := auth.IssueParams{Name: name, Scopes: auth.AdminScopes(), ExpiresIn: expires}
	if len(scopes) > 0 {
		var err error
		if p.Scopes, err = auth.ParseScopes(scopes); err != nil {
			return p, usageError(fmt.Errorf("--scope: %w", err))
		}
	}
	if expiresSet && expires <= 0 {
		return p, usageError(fmt.Errorf("%w: --expires %s", auth.ErrInvalidExpiry, expires))
	}
	if err := p.Validate(); err != nil {
		return p, usageError(fmt.Errorf("%w: %q", err, name))
	}
	return p, nil
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
