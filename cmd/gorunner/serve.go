package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/console"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
)

type serveFlags struct {
	processFlags
	addr           string
	examples       bool
	publicURL      string
	allowedOrigins []string
}

// serveShutdownTimeout is serve's --shutdown-timeout default.
const serveShutdownTimeout = 20 * time.Second

func newServeCommand(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the REST API, /mcp and webhooks, and work runs",
		Long: "Serve the REST API, the MCP endpoint (/mcp), webhooks, /metrics and a worker pool over one store.\n" +
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
	f.processFlags.addTo(fl, serveShutdownTimeout)
	return cmd
}

func serve(cmd *cobra.Command, g *globals, f *serveFlags) error {
	ctx := cmd.Context()
	egress, publicURL, err := f.check(g)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", f.addr, err)
	}
	defer ln.Close() // also closed by Shutdown; this covers the early returns
	if publicURL == "" {
		if publicURL, err = listenURL(ln.Addr()); err != nil {
			return err
		}
	}
	p, err := openProcess(ctx, g, &f.processFlags, egress, mcpserver.Config{PublicURL: publicURL, AllowedOrigins: f.allowedOrigins})
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.prepare(ctx, cmd.OutOrStdout(), f.examples); err != nil {
		return err
	}
	hs, err := p.httpServer(publicURL, f.publicURL != "")
	if err != nil {
		return err
	}
	if err := p.start(ctx); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintln(cmd.OutOrStdout(), "GoRunner listening on http://"+ln.Addr().String())
	p.log.Info("serving", "addr", ln.Addr().String(), "public_url", publicURL, "data_dir", p.dataDir)

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	p.log.Info("shutting down", "timeout", f.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
	defer cancel()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, p.stop(sctx, hs.Shutdown))
}

// prepare readies the store for serving: the admin token on first start, the examples
// when asked.
func (p *process) prepare(ctx context.Context, out io.Writer, examples bool) error {
	if err := p.ensureAdminToken(ctx, out); err != nil {
		return fmt.Errorf("creating the admin token: %w", err)
	}
	if !examples {
		return nil
	}
	return p.installExamples(ctx)
}

// installExamples creates and publishes the example workflows not in the store yet. The
// operator starting the process asked for them: published as the local principal, an
// admin, as `gorunner mcp` over stdio acts.
func (p *process) installExamples(ctx context.Context) error {
	created, err := p.catalog.InstallTemplates(ctx, auth.Local())
	if err != nil {
		return err
	}
	for _, w := range created {
		p.log.Info("example workflow created and published", "workflow", w.Name)
	}
	return nil
}

// httpServer is the REST API, /mcp, OAuth (when withOAuth), the console and /metrics on
// one handler.
func (p *process) httpServer(publicURL string, withOAuth bool) (*http.Server, error) {
	oa, as, err := newOAuth(p.app, withOAuth, publicURL)
	if err != nil {
		return nil, err
	}
	deps := api.Deps{Catalog: p.catalog, Auth: p.auth, Engine: p.engine, Idempotency: p.idem, OAuth: oa}
	web, err := console.New(deps, &console.Config{SecretKey: p.secretKey, BaseURL: publicURL, Logger: p.log})
	if err != nil {
		return nil, err
	}
	srv, err := api.New(deps, &api.Config{
		Logger: p.log, Ready: p.store.Ping, Metrics: promhttp.HandlerFor(p.metrics, promhttp.HandlerOpts{}), PublicURL: publicURL,
		MCP: p.mcp.HTTPHandler(), Public: mcpserver.MetadataHandlers(publicURL, as), Console: web,
	})
	if err != nil {
		return nil, err
	}
	return api.NewHTTPServer(srv, nil), nil
}

// check refuses, as usage errors, the flags serve can tell are wrong without opening
// anything, before it opens its port or its data directory: such a mistake exits with code
// 2 and leaves nothing behind (an unreachable Redis, say, is found only when opening).
// It returns the --http-allow policy and the --public-url in the form every URL is written
// with ("" when unset).
func (f *serveFlags) check(g *globals) (*runner.EgressPolicy, string, error) {
	if err := g.check(); err != nil {
		return nil, "", err
	}
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return nil, "", usageError(fmt.Errorf("--addr %q: want HOST:PORT, e.g. 127.0.0.1:8080", f.addr))
	}
	publicURL := ""
	if f.publicURL != "" {
		u, err := api.PublicOrigin(f.publicURL)
		if err != nil {
			return nil, "", usageError(fmt.Errorf("--public-url: %w", err))
		}
		publicURL = u
	}
	for _, o := range f.allowedOrigins {
		if err := checkOrigin(o); err != nil {
			return nil, "", usageError(fmt.Errorf("--allowed-origins: %w", err))
		}
	}
	egress, err := f.egress()
	return egress, publicURL, err
}

// checkOrigin refuses what a browser never sends as an Origin: an origin is a scheme and a
// host (with a port, maybe), nothing else.
func checkOrigin(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("origin %q: want SCHEME://HOST[:PORT], e.g. https://app.example", raw)
	}
	return nil
}

// listenURL is the public URL when --public-url is not set: http:// and the listen address
// (loopback for an unspecified address such as 0.0.0.0).
func listenURL(addr net.Addr) (string, error) {
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
