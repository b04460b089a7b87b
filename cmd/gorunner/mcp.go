package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/mcpserver"
)

// mcpShutdownTimeout is mcp's --shutdown-timeout default: an editor closing its MCP
// servers waits less than an orchestrator stopping serve.
const mcpShutdownTimeout = 10 * time.Second

type mcpFlags struct {
	processFlags
	metricsAddr string
	examples    bool
}

func newMCPCommand(g *globals) *cobra.Command {
	f := &mcpFlags{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the published workflows as MCP tools over stdio, and work runs",
		Long: "Serve MCP over stdin/stdout on the same store as `gorunner serve`, and work runs meanwhile.\n" +
			"The caller is the token in GORUNNER_TOKEN if set (it must be valid), else the built-in principal local.\n" +
			"Logs go to stderr; stdout carries the protocol only. With --metrics-addr, /metrics (the same as serve's) is served on that address.",
		Example: `  {"mcpServers": {"gorunner": {"command": "gorunner", "args": ["mcp", "--data-dir", "/path/to/.gorunner"]}}}
  gorunner mcp --metrics-addr 127.0.0.1:9464   # let Prometheus scrape the stdio server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveMCP(cmd, g, f)
		},
	}
	f.processFlags.addTo(cmd.Flags(), mcpShutdownTimeout)
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics on this address, e.g. 127.0.0.1:9464; default none (env GORUNNER_METRICS_ADDR)")
	cmd.Flags().BoolVar(&f.examples, "examples", false, "create and publish the example workflows (env GORUNNER_EXAMPLES)")
	return cmd
}

func serveMCP(cmd *cobra.Command, g *globals, f *mcpFlags) (err error) {
	ctx := cmd.Context()
	egress, err := f.egress()
	if err != nil {
		return err
	}
	p, err := openProcess(ctx, g, &f.processFlags, egress, mcpserver.Config{})
	if err != nil {
		return err
	}
	defer p.Close()
	principal, err := stdioPrincipal(ctx, p.auth, os.Getenv("GORUNNER_TOKEN"))
	if err != nil {
		return err
	}
	if err := p.readyCatalog(ctx, f.examples); err != nil {
		return err
	}
	stopMetrics, err := p.serveMetrics(f.metricsAddr)
	if err != nil {
		return err
	}
	if err := p.start(ctx); err != nil {
		return errors.Join(err, stopMetrics(context.WithoutCancel(ctx)))
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
		defer cancel()
		err = errors.Join(err, p.stop(sctx, stopMetrics))
	}()
	p.log.Info("serving MCP over stdio", "principal", principal.Name, "data_dir", p.dataDir)
	err = p.mcp.ServeStdio(ctx, principal, cmd.InOrStdin(), cmd.OutOrStdout())
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		p.log.Info("shutting down on signal", "timeout", f.shutdownTimeout)
		return nil // SIGINT or SIGTERM: a clean stop, bounded by --shutdown-timeout
	}
	return err
}

// readyCatalog installs the examples when asked, and says so on stderr when the store
// publishes no workflow: the MCP client would list GoRunner's own tools only, with no word
// of why.
func (p *process) readyCatalog(ctx context.Context, examples bool) error {
	if examples {
		if err := p.installExamples(ctx); err != nil {
			return fmt.Errorf("installing the examples: %w", err)
		}
	}
	published, _, err := p.catalog.List(ctx, catalog.ListWorkflowsParams{Page: catalog.Page{Limit: 1}, PublishedOnly: true})
	if err != nil {
		return fmt.Errorf("reading the catalog: %w", err)
	}
	if len(published) == 0 {
		p.log.Warn("no workflow is published in this store, so the MCP client gets no workflow tools: "+
			"publish one (gorunner workflow apply FILE, then gorunner workflow publish NAME) or start with --examples",
			"data_dir", p.dataDir)
	}
	return nil
}

// serveMetrics serves the process's /metrics on addr, unless addr is empty, and returns
// what stops it.
func (p *process) serveMetrics(addr string) (stop func(context.Context) error, err error) {
	if addr == "" {
		return func(context.Context) error { return nil }, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.metrics, promhttp.HandlerOpts{}))
	hs := api.NewHTTPServer(mux, nil)
	go func() {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("serving metrics", "addr", ln.Addr().String(), "error", err)
		}
	}()
	p.log.Info("serving metrics", "addr", ln.Addr().String())
	return hs.Shutdown, nil
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
