package runner

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/schemas"
)

// Config tunes an Engine. The zero value (or nil) means defaults.
type Config struct {
	// Owner names this worker in leases; default hostname-pid-random.
	Owner string
	// Concurrency is how many runs this engine works at once; default 8. An http step's
	// attempt gives its run's slot back while it waits on the network (HTTPConcurrency
	// bounds those instead), so that slow hosts do not keep other runs waiting.
	Concurrency int
	// HTTPConcurrency is how many http step attempts this engine has in flight at once, of
	// all workflows; default DefaultHTTPConcurrency. An attempt that would go over it does
	// not start (nor count as an attempt): its run is handed back, due again after
	// HTTPBusyDelay.
	HTTPConcurrency int
	// HTTPPerWorkflow is how many of those may be attempts of runs of one workflow, so that
	// the runs of one workflow calling a slow host cannot take them all; default
	// DefaultHTTPPerWorkflow, at most HTTPConcurrency.
	HTTPPerWorkflow int
	// LeaseTTL is how long a claim lasts unless renewed (every LeaseTTL/3); default 30s.
	LeaseTTL time.Duration
	// PollInterval is how often the engine looks for runs whose wake-up time has come
	// (sleeps, retry backoff and hook timeouts of a minute or more, expired leases); default
	// 250ms. A run made due by any process sharing Events (admitted, resumed, woken) is
	// claimed on its notice, without waiting for a poll.
	PollInterval time.Duration
	// Now is the clock; default time.Now. Tests inject one to drive sleeps and backoff.
	Now func() time.Time
	// Egress decides which addresses http steps may reach, checked on the resolved address
	// of every connection (redirects included); nil means public addresses only.
	Egress *EgressPolicy
	// Logger receives the engine's logs; default slog.Default().
	Logger *slog.Logger
	// Kinds are step kinds added by the embedder, by the name used in definitions.
	Kinds map[string]StepHandler
	// MaxWait caps how long one Wait call may hold; default 5m.
	MaxWait time.Duration
	// MaxDepth is how deeply workflow steps may nest child runs: a run started from outside
	// is at depth 0 and a workflow step that would start a child deeper than MaxDepth fails
	// with DEPTH_LIMIT; default 16.
	MaxDepth int
	// AdmissionWork bounds how long the steps without effects at the head of a run run in
	// its admission before it is written (see Engine.Commit); past it a worker goes on.
	// Default DefaultAdmissionWork.
	AdmissionWork time.Duration
	// Registerer receives the engine's metrics (runs started and finished, step
	// durations); nil registers none.
	Registerer prometheus.Registerer
	// Events is the process's signalling layer: the engine publishes events.Run after
	// every save of a run and events.Due when it admits, resumes, cancels or wakes one, and
	// its waiters (Wait, Watch) and claim loop follow them. Share one bus, started with the
	// store's transport, between the engine, the idempotency service and the MCP server of
	// a process, so that other processes' changes reach them. Nil means a bus of the
	// engine's own, which hears only this engine.
	Events *events.Bus
	// SecretKey (at least 32 bytes) keys the sealing of the cursors List hands out, with a
	// key derived from it for that use alone: a cursor hides the run it points after and
	// opens only where it was sealed. Processes sharing a store share it (the data
	// directory's secret.key), so that a cursor from one works on any. Nil means a random
	// key of the engine's own: its cursors then work with this engine only.
	SecretKey []byte
	// Tracer, when set, is what the engine starts its spans with (SPEC §7, traces): one per
	// admission (TraceAdmission) and one per step attempt, parented on the run's
	// TraceParent; http steps send their attempt's traceparent. Nil (tracing off) starts
	// none and costs nothing.
	Tracer trace.Tracer

	// maxHTTPTimeout bounds one http attempt whatever its definition asks:
	// schemas.MaxHTTPTimeout, except in tests, which cannot wait that long.
	maxHTTPTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultConcurrency = 8
	// DefaultHTTPConcurrency bounds the http attempts in flight in a process.
	DefaultHTTPConcurrency = 64
	// DefaultHTTPPerWorkflow bounds the http attempts in flight in a process of one workflow.
	DefaultHTTPPerWorkflow = 16
	DefaultLeaseTTL        = 30 * time.Second
	DefaultPollInterval    = 250 * time.Millisecond
	DefaultMaxWait         = 5 * time.Minute
	DefaultMaxDepth        = 16
	// DefaultAdmissionWork keeps an admission's answer prompt, whatever its first steps
	// compute.
	DefaultAdmissionWork = 10 * time.Millisecond
)

func (c *Config) withDefaults() Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Owner == "" {
		out.Owner = defaultOwner()
	}
	if out.Concurrency == 0 {
		out.Concurrency = DefaultConcurrency
	}
	if out.HTTPConcurrency == 0 {
		out.HTTPConcurrency = DefaultHTTPConcurrency
	}
	if out.HTTPPerWorkflow == 0 {
		out.HTTPPerWorkflow = min(DefaultHTTPPerWorkflow, out.HTTPConcurrency)
	}
	if out.LeaseTTL == 0 {
		out.LeaseTTL = DefaultLeaseTTL
	}
	if out.PollInterval == 0 {
		out.PollInterval = DefaultPollInterval
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.MaxWait == 0 {
		out.MaxWait = DefaultMaxWait
	}
	if out.MaxDepth == 0 {
		out.MaxDepth = DefaultMaxDepth
	}
	if out.AdmissionWork == 0 {
		out.AdmissionWork = DefaultAdmissionWork
	}
	if out.maxHTTPTimeout == 0 {
		out.maxHTTPTimeout = schemas.MaxHTTPTimeout
	}
	if out.Events == nil {
		out.Events = events.New(nil, &events.Config{Logger: out.Logger})
	}
	return out
}

func (c *Config) validate() error {
	switch {
	case c.Concurrency < 0:
		return errors.New("runner config: Concurrency must not be negative")
	case c.HTTPConcurrency < 0 || c.HTTPPerWorkflow < 0:
		return errors.New("runner config: HTTPConcurrency and HTTPPerWorkflow must not be negative")
	case c.HTTPPerWorkflow > c.HTTPConcurrency:
		return fmt.Errorf("runner config: HTTPPerWorkflow (%d) must not be above HTTPConcurrency (%d)", c.HTTPPerWorkflow, c.HTTPConcurrency)
	case c.LeaseTTL < 3*time.Millisecond:
		return errors.New("runner config: LeaseTTL must be at least 3ms")
	case c.PollInterval < 0 || c.MaxWait < 0 || c.AdmissionWork < 0:
		return errors.New("runner config: PollInterval, MaxWait and AdmissionWork must not be negative")
	case c.MaxDepth < 0:
		return errors.New("runner config: MaxDepth must not be negative")
	case c.SecretKey != nil && len(c.SecretKey) < 32:
		return fmt.Errorf("runner config: SecretKey must be at least 32 bytes, got %d", len(c.SecretKey))
	}
	for name, h := range c.Kinds {
		if h == nil || schemas.ReservedStepKey(name) {
			return fmt.Errorf("runner config: step kind %q has no handler or is built in", name)
		}
	}
	return nil
}

func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil {
		host = "worker"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
