package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/tracing"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/stack"
)

// minLeaseTTL is the shortest --lease-ttl: a lease is renewed every third of it, and a
// shorter one would spend the store on renewals (0 would silently mean the default).
const minLeaseTTL = time.Second

// processFlags are the flags of the commands that run a GoRunner process, serve and mcp:
// each is a worker pool and an MCP server over one store, configured alike.
type processFlags struct {
	httpAllow       []string
	leaseTTL        time.Duration
	maxDepth        int
	listLimit       int
	shutdownTimeout time.Duration
	retention       time.Duration
}

// addTo adds the process flags to fl; shutdown is the command's --shutdown-timeout
// default (an editor waits less for `gorunner mcp` than an orchestrator for serve).
func (f *processFlags) addTo(fl *pflag.FlagSet, shutdown time.Duration) {
	fl.StringSliceVar(&f.httpAllow, "http-allow", nil, "let HTTP steps reach a loopback or private address: CIDR or HOST[:PORT], repeatable or comma-separated (env GORUNNER_HTTP_ALLOW)")
	fl.DurationVar(&f.leaseTTL, "lease-ttl", runner.DefaultLeaseTTL, "how long a run stays claimed by a process that stops renewing it (env GORUNNER_LEASE_TTL)")
	fl.IntVar(&f.maxDepth, "max-depth", runner.DefaultMaxDepth, "how deeply workflow steps may nest child runs; deeper fails the step with DEPTH_LIMIT (env GORUNNER_MAX_DEPTH)")
	fl.IntVar(&f.listLimit, "mcp-list-limit", mcpserver.DefaultListLimit, "with more published workflows than this, tools/list offers "+
		"gorunner_find_workflows and gorunner_run_workflow instead of one tool per workflow (env GORUNNER_MCP_LIST_LIMIT)")
	f.retention = runner.DefaultRetention
	fl.Var(retentionValue{&f.retention}, "retention", "how long ended runs are kept: a duration (24h) or days (30d), at least 1s; 0 keeps them forever (env GORUNNER_RETENTION)")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", shutdown, "how long in-flight requests and steps may take to finish on SIGTERM (env GORUNNER_SHUTDOWN_TIMEOUT)")
}

// egress checks the flags a usage error can be made in and returns the --http-allow
// policy; commands call it before anything else, so that a usage error is reported as one.
func (f *processFlags) egress() (*runner.EgressPolicy, error) {
	if err := checkAtLeastOne("mcp-list-limit", f.listLimit); err != nil {
		return nil, err
	}
	if err := checkAtLeastOne("max-depth", f.maxDepth); err != nil {
		return nil, err
	}
	if f.leaseTTL < minLeaseTTL {
		return nil, usageError(fmt.Errorf("--lease-ttl must be at least %s, got %s", minLeaseTTL, f.leaseTTL))
	}
	if f.shutdownTimeout < 0 {
		return nil, usageError(fmt.Errorf("--shutdown-timeout must not be negative, got %s", f.shutdownTimeout))
	}
	p, err := runner.NewEgressPolicy(f.httpAllow...)
	if err != nil {
		return nil, usageError(fmt.Errorf("--http-allow: %w", err))
	}
	return p, nil
}

// checkAtLeastOne refuses a count flag below 1 (where 0 would silently mean the default),
// as a usage error.
func checkAtLeastOne(flag string, n int) error {
	if n < 1 {
		return usageError(fmt.Errorf("--%s must be at least 1, got %d", flag, n))
	}
	return nil
}

// process is one GoRunner process, wired the same way for serve and mcp: the services
// over the store (stack.New) and the MCP server, with every metric in one registry.
type process struct {
	*app
	metrics *prometheus.Registry
	idem    *idempotency.Service
	engine  *runner.Engine
	mcp     *mcpserver.Server
	// traces exports the process's spans over OTLP; nil when the OTEL_* environment asks
	// for none.
	traces *tracing.Provider
}

// openProcess opens the store and wires the process. egress is f's checked policy; mcp
// holds what only the command knows (the public URL, allowed origins), the rest of it is
// filled here. Every line the process logs has its secrets redacted and, while serving a
// request of the REST API or /mcp, carries the request's ID.
func openProcess(ctx context.Context, g *globals, f *processFlags, egress *runner.EgressPolicy, mcp mcpserver.Config) (*process, error) {
	a, err := openData(ctx, g)
	if err != nil {
		return nil, err
	}
	a.log = slog.New(api.LogHandler(a.log.Handler()))
	p := &process{app: a}
	if p.traces, err = tracing.Setup(ctx, version()); err != nil {
		a.Close()
		return nil, err
	}
	if err := p.wire(egress, f, mcp); err != nil {
		a.Close()
		return nil, err
	}
	// Workflows an older GoRunner stored keep their plaintext webhook token until sealed.
	n, err := p.catalog.SealWebhooks(ctx)
	if err != nil {
		a.Close()
		return nil, err
	}
	if n > 0 {
		p.log.Info("sealed the webhook tokens of workflows stored in the clear", "workflows", n)
	}
	return p, nil
}

// wire builds the services over the store (stack.New) and the MCP server over them, all
// registering their metrics in p.metrics.
func (p *process) wire(egress *runner.EgressPolicy, f *processFlags, mcp mcpserver.Config) error {
	p.metrics = prometheus.NewRegistry()
	p.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	err := p.openServices(&stack.Config{Logger: p.log, Registerer: p.metrics,
		Runner:  runner.Config{Egress: egress, LeaseTTL: f.leaseTTL, MaxDepth: f.maxDepth, Tracer: p.traces.Tracer()},
		Sweeper: runner.SweeperConfig{Retention: f.retention}})
	if err != nil {
		return err
	}
	p.idem, p.engine = p.stack.Idempotency, p.stack.Engine
	mcp.Version, mcp.Logger, mcp.Registerer, mcp.ListLimit = version(), p.log, p.metrics, f.listLimit
	mcp.StateKey = p.secretKey // a question asked by one process can be answered through another
	p.mcp, err = mcpserver.New(mcpserver.Deps{Catalog: p.catalog, Engine: p.engine, Idempotency: p.idem, Ready: p.store.Ping}, &mcp)
	return err
}

// start starts the services (the events bus first, stack.Start), then the MCP server's
// catalog watch.
func (p *process) start(ctx context.Context) error {
	if err := p.stack.Start(ctx); err != nil {
		return err
	}
	if err := p.mcp.Start(ctx); err != nil {
		return errors.Join(err, p.stack.Stop(context.WithoutCancel(ctx)))
	}
	return nil
}

// stop ends the work in order, within ctx: the MCP sessions first, so that no call
// arrives meanwhile, then the command's own listeners (between), then the services
// (stack.Stop: the engine hands the runs in flight back, the events bus goes last), and
// last the traces, whose spans are all ended by then.
func (p *process) stop(ctx context.Context, between ...func(context.Context) error) error {
	p.engine.EndWaits() // a wait or an event stream must not hold what follows
	errs := []error{p.mcp.Stop(ctx)}
	for _, f := range between {
		errs = append(errs, f(ctx))
	}
	return errors.Join(append(errs, p.stack.Stop(ctx), p.traces.Shutdown(ctx))...)
}
