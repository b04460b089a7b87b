package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/oauth"
)

func newAuthCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "auth", Short: "Sign-in help for the OAuth authorize page"}
	var scopes []string
	approve := &cobra.Command{
		Use:   "approve",
		Short: "Print a one-time code that signs in on the authorize page (for headless setups)",
		Long: "Print a one-time sign-in code for the OAuth authorize page (/oauth/authorize of serve --public-url):\n" +
			"type it where the page asks for a token. It works once, for " + oauth.SignInCodeTTL.String() + ", and approves at most\n" +
			"the scopes given here. Grants approved with it belong to the principal \"local\".",
		Example: "  gorunner auth approve --scope runs:write --scope runs:read",
		Args:    cobra.NoArgs,
		RunE: withApp(g, func(cmd *cobra.Command, _ []string, a *app) error {
			sc, err := auth.ParseScopes(scopes)
			if err != nil {
				return err
			}
			code, expires, err := oauth.NewSignInCode(cmd.Context(), a.store, auth.Local(), sc, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), code)
			fmt.Fprintf(cmd.ErrOrStderr(), "one-time sign-in code for %q, valid once until %s\n", sc.String(), expires.Local().Format(time.Kitchen))
			return nil
		}),
	}
	approve.Flags().StringArrayVar(&scopes, "scope", []string{"runs:write", "runs:read"}, "a scope the code may approve (repeatable): admin, workflows:write, runs:write, runs:read, runs:*:workflow=NAME, runs:*:tag=TAG")
	cmd.AddCommand(approve)
	return cmd
}

// newOAuth is the authorization server of serve --public-url, and what the protected
// resource metadata says of it; both nil unless the public URL was set (on), not derived
// from the listen address (OAuth off).
func newOAuth(a *app, on bool, publicURL string) (*oauth.Server, *mcpserver.AuthorizationServer, error) {
	if !on {
		return nil, nil, nil
	}
	s, err := oauth.New(a.store, a.auth, &oauth.Config{PublicURL: publicURL, Logger: a.log})
	if err != nil {
		return nil, nil, fmt.Errorf("--public-url: %w", err)
	}
	return s, &mcpserver.AuthorizationServer{Issuer: s.Issuer(), Scopes: oauth.ResourceScopes()}, nil
}
