package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/console"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
)

type serveFlags struct {
	addr            string
	examples        bool
	publicURL       string
	allowedOrigins  []string
	httpAllow       []string
	shutdownTimeout time.Duration
	leaseTTL        time.Duration
	maxDepth        int
	listLimit       int
}

func newServeCommand(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the REST API, /mcp and webhooks, and work runs",
		Long: "Serve the REST API, the MCP endpoint (/mcp), webhooks and a worker pool over one store.\n" +
			"On first start with no token it creates an admin token, writes it to <data-dir>/admin-token (0600) and prints it once when stdout is a terminal.",
		Example: "  gorunner serve --examples\n  gorunner serve --http-allow 127.0.0.1:9000   # let steps call a local service\n  gorunner serve --addr 0.0.0.0:8080 --store sqlite:/var/lib/gorunner/gorunner.db",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address (env GORUNNER_ADDR)")
	fl.BoolVar(&f.examples, "examples", false, "create and publish the example workflows (env GORUNNER_EXAMPLES)")
	fl.StringVar(&f.publicURL, "public-url", "", "URL clients reach this server at, used in every absolute URL it writes (webhook URLs, /mcp resource metadata); default http://<addr>; set, it turns on the OAuth authorization server for /mcp (env GORUNNER_PUBLIC_URL)")
	fl.StringSliceVar(&f.allowedOrigins, "allowed-origins", nil, "further browser origins allowed to call /mcp besides the public URL's, comma-separated (env GORUNNER_ALLOWED_ORIGINS)")
	httpAllowFlag(fl, &f.httpAllow)
	fl.DurationVar(&f.leaseTTL, "lease-ttl", 30*time.Second, "how long a run stays claimed by a process that stops renewing it (env GORUNNER_LEASE_TTL)")
	addMaxDepthFlag(fl, &f.maxDepth)
	listLimitFlag(fl, &f.listLimit)
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 20*time.Second, "how long in-flight requests and steps may take to finish on SIGTERM (env GORUNNER_SHUTDOWN_TIMEOUT)")
	return cmd
}

func serve(cmd *cobra.Command, g *globals, f *serveFlags) error {
	ctx := cmd.Context()
	egress, err := egressPolicy(f.httpAllow)
	if err != nil {
		return err
	}
	if err := checkAtLeastOne("mcp-list-limit", f.listLimit); err != nil {
		return err
	}
	if err := checkAtLeastOne("max-depth", f.maxDepth); err != nil {
		return err
	}
	a, err := openApp(ctx, g)
	if err != nil {
		return err
	}
	defer a.Close()
	a.log = slog.New(api.LogHandler(a.log.Handler()))
	out := func(s string) { fmt.Fprintln(cmd.OutOrStdout(), s) }
	if err := a.ensureAdminToken(ctx, cmd.OutOrStdout()); err != nil {
		return fmt.Errorf("creating the admin token: %w", err)
	}
	if f.examples {
		created, err := a.catalog.InstallTemplates(ctx)
		if err != nil {
			return err
		}
		for _, w := range created {
			a.log.Info("example workflow created and published", "workflow", w.Name)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	timer, err := newStoreTimer(reg)
	if err != nil {
		return err
	}
	bus, stopEvents, err := a.startEvents(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	idem, err := idempotency.New(timedKeys{a.store, timer}, &idempotency.Config{Logger: a.log, Registerer: reg, Events: bus})
	if err != nil {
		return err
	}
	engine, err := runner.New(timedRuns{a.store, timer}, a.catalog, a.catalog,
		&runner.Config{Logger: a.log, Egress: egress, LeaseTTL: f.leaseTTL, MaxDepth: f.maxDepth, Registerer: reg, Events: bus})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", f.addr, err)
	}
	defer ln.Close() // also closed by Shutdown; this covers the early returns
	publicURL, err := publicURLOf(f.publicURL, ln.Addr())
	if err != nil {
		return err
	}
	mcpSrv, err := mcpserver.New(mcpserver.Deps{Catalog: a.catalog, Engine: engine, Idempotency: idem},
		&mcpserver.Config{Version: version(), Logger: a.log, Registerer: reg, ListLimit: f.listLimit,
			PublicURL: publicURL, AllowedOrigins: f.allowedOrigins})
	if err != nil {
		return err
	}
	oa, as, err := newOAuth(a, f.publicURL != "", publicURL)
	if err != nil {
		return err
	}
	web, err := console.New(console.Config{Catalog: a.catalog, Auth: a.auth, Engine: engine, Idempotency: idem, OAuth: oa,
		SecretKey: a.secretKey, BaseURL: publicURL, Logger: a.log})
	if err != nil {
		return err
	}
	srv, err := api.New(api.Config{
		Catalog: a.catalog, Auth: a.auth, Engine: engine, Idempotency: idem, Logger: a.log,
		Ready: a.store.Ping, Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), PublicURL: publicURL,
		MCP: mcpSrv.HTTPHandler(), Public: mcpserver.MetadataHandlers(publicURL, as), OAuth: oa, Console: web,
	})
	if err != nil {
		return err
	}
	if err := engine.Start(ctx); err != nil {
		return err
	}
	if err := mcpSrv.Start(ctx); err != nil {
		return errors.Join(err, engine.Stop(context.WithoutCancel(ctx)))
	}
	hs := api.NewHTTPServer(srv, nil)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	out("GoRunner listening on http://" + ln.Addr().String())
	a.log.Info("serving", "addr", ln.Addr().String(), "public_url", publicURL, "data_dir", a.dataDir)

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	a.log.Info("shutting down", "timeout", f.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
	defer cancel()
	merr := mcpSrv.Stop(sctx)
	herr := hs.Shutdown(sctx)
	eerr := engine.Stop(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, merr, herr, eerr)
}

// publicURLOf is the --public-url checked, or else http:// and the listen address
// (loopback for an unspecified address such as 0.0.0.0).
func publicURLOf(flag string, addr net.Addr) (string, error) {
	if flag != "" {
		return api.PublicOrigin(flag)
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "", fmt.Errorf("listening on %s: not a TCP address; set --public-url", addr)
	}
	ip := tcp.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port)), nil
}
