package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
)

// mcpStopTimeout is how long in-flight steps may take to finish once stdin closes.
const mcpStopTimeout = 10 * time.Second

func newMCPCommand(g *globals) *cobra.Command {
	var allow []string
	var maxDepth int
	var listLimit int
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the published workflows as MCP tools over stdio, and work runs",
		Long: "Serve MCP over stdin/stdout on the same store as `gorunner serve`, and work runs meanwhile.\n" +
			"The caller is the token in GORUNNER_TOKEN if set (it must be valid), else the built-in principal local.\n" +
			"Logs go to stderr; stdout carries the protocol only.",
		Example: `  {"mcpServers": {"gorunner": {"command": "gorunner", "args": ["mcp", "--data-dir", "/path/to/.gorunner"]}}}`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveMCP(cmd, g, allow, listLimit, maxDepth)
		},
	}
	httpAllowFlag(cmd.Flags(), &allow)
	listLimitFlag(cmd.Flags(), &listLimit)
	addMaxDepthFlag(cmd.Flags(), &maxDepth)
	return cmd
}

// listLimitFlag adds --mcp-list-limit, which serve and mcp share.
func listLimitFlag(fl *pflag.FlagSet, p *int) {
	fl.IntVar(p, "mcp-list-limit", mcpserver.DefaultListLimit, "with more published workflows than this, tools/list offers "+
		"gorunner_find_workflows and gorunner_run_workflow instead of one tool per workflow (env GORUNNER_MCP_LIST_LIMIT)")
}

// addMaxDepthFlag adds --max-depth, the engine's runner.Config.MaxDepth, which serve and
// mcp share.
func addMaxDepthFlag(fl *pflag.FlagSet, v *int) {
	fl.IntVar(v, "max-depth", runner.DefaultMaxDepth, "how deeply workflow steps may nest child runs; deeper fails the step with DEPTH_LIMIT (env GORUNNER_MAX_DEPTH)")
}

// checkAtLeastOne refuses a count flag below 1 (where 0 would silently mean the default),
// as a usage error.
func checkAtLeastOne(flag string, n int) error {
	if n < 1 {
		return usageError(fmt.Errorf("--%s must be at least 1, got %d", flag, n))
	}
	return nil
}

func serveMCP(cmd *cobra.Command, g *globals, allow []string, listLimit, maxDepth int) (err error) {
	ctx := cmd.Context()
	egress, err := egressPolicy(allow)
	if err != nil {
		return err
	}
	if err := checkAtLeastOne("mcp-list-limit", listLimit); err != nil {
		return err
	}
	if err := checkAtLeastOne("max-depth", maxDepth); err != nil {
		return err
	}
	a, err := openApp(ctx, g)
	if err != nil {
		return err
	}
	defer a.Close()
	principal, err := stdioPrincipal(ctx, a.auth, os.Getenv("GORUNNER_TOKEN"))
	if err != nil {
		return err
	}
	bus, stopEvents, err := a.startEvents(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	idem, err := idempotency.New(a.store, &idempotency.Config{Logger: a.log, Events: bus})
	if err != nil {
		return err
	}
	engine, err := runner.New(a.store, a.catalog, a.catalog, &runner.Config{Logger: a.log, Egress: egress, MaxDepth: maxDepth, Events: bus})
	if err != nil {
		return err
	}
	srv, err := mcpserver.New(mcpserver.Deps{Catalog: a.catalog, Engine: engine, Idempotency: idem},
		&mcpserver.Config{Version: version(), Logger: a.log, ListLimit: listLimit})
	if err != nil {
		return err
	}
	if err := engine.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mcpStopTimeout)
		defer cancel()
		err = errors.Join(err, srv.Stop(sctx), engine.Stop(sctx))
	}()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	a.log.Info("serving MCP over stdio", "principal", principal.Name, "data_dir", a.dataDir)
	err = srv.ServeStdio(ctx, principal, cmd.InOrStdin(), cmd.OutOrStdout())
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		a.log.Info("shutting down on signal", "timeout", mcpStopTimeout)
		return nil // SIGINT or SIGTERM: a clean stop, bounded by mcpStopTimeout
	}
	return err
}

// stdioPrincipal is who calls over stdio: the owner of token, which must be valid, or the
// built-in principal local when no token is given.
func stdioPrincipal(ctx context.Context, a *auth.Service, token string) (auth.Principal, error) {
	if token == "" {
		return auth.Local(), nil
	}
	p, err := a.Authenticate(ctx, token)
	if errors.Is(err, auth.ErrUnauthorized) {
		return auth.Principal{}, errors.New("GORUNNER_TOKEN is not a valid token; unset it to serve as the local principal")
	}
	if err != nil {
		return auth.Principal{}, fmt.Errorf("checking GORUNNER_TOKEN: %w", err)
	}
	return p, nil
}
