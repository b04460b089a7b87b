// Package stack wires the services of one GoRunner process over a store.Backend, the one
// place they are wired: the events bus over the backend's transport, the catalog, the
// token service (which hears and tells revokes on the bus), keyed replay and the engine
// over the store with its calls timed (store/storemetrics), the schedules' loop and the
// retention sweeper, all keyed by the one secret key and registering their metrics in one
// registry. `gorunner serve` and `gorunner mcp` put their faces (REST, console, MCP) on
// top of a Stack, and stack/stacktest builds every test's stack with it, so that two test
// stacks on one store see each other as two processes do.
package stack

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/scheduler"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/storemetrics"
)

// Config varies a Stack. New fills what the services share: each service's SecretKey,
// Logger, Registerer and Events are the stack's, whatever they were set to.
type Config struct {
	// SecretKey keys every sealed or signed value (connection secrets, webhook tokens, kept
	// answers carrying them, run list cursors): the data directory's secret.key, 32 bytes.
	SecretKey []byte
	// Logger receives every service's logs; default slog.Default().
	Logger *slog.Logger
	// Registerer receives every service's metrics; default a registry of the stack's own.
	Registerer prometheus.Registerer
	// The services' own settings.
	Catalog     catalog.Config
	Auth        auth.Config
	Idempotency idempotency.Config
	Runner      runner.Config
	Scheduler   scheduler.Config
	Sweeper     runner.SweeperConfig
	// Runs, when set, wraps the engine's store (timed), for a test that watches or breaks
	// the engine's store calls.
	Runs func(runner.Store) runner.Store
}

// Stack is the services of one process over one store.
type Stack struct {
	Store       store.Backend
	Bus         *events.Bus
	Catalog     *catalog.Service
	Auth        *auth.Service
	Idempotency *idempotency.Service
	Engine      *runner.Engine
	Scheduler   *scheduler.Scheduler
	Sweeper     *runner.Sweeper
}

// New builds the services over backend; nothing runs until Start. The caller keeps
// backend, and closes it after Stop.
func New(backend store.Backend, cfg *Config) (*Stack, error) {
	c := *cfg
	if len(c.SecretKey) != 32 {
		return nil, errors.New("stack: the secret key must be 32 bytes")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	timer, err := storemetrics.New(c.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Stack{Store: backend, Bus: events.New(backend.Events(), &events.Config{Logger: c.Logger})}
	if err := s.services(&c, timer); err != nil {
		return nil, err
	}
	return s, s.loops(&c, timer)
}

// services builds the catalog, the token service, keyed replay and the engine.
func (s *Stack) services(c *Config, timer *storemetrics.Timer) (err error) {
	c.Catalog.SecretKey = c.SecretKey
	if s.Catalog, err = catalog.New(s.Store, &c.Catalog); err != nil {
		return err
	}
	c.Auth.Events = s.Bus
	if s.Auth, err = auth.New(s.Store, &c.Auth); err != nil {
		return err
	}
	c.Idempotency.Logger, c.Idempotency.Registerer, c.Idempotency.Events = c.Logger, c.Registerer, s.Bus
	c.Idempotency.SecretKey = c.SecretKey
	if s.Idempotency, err = idempotency.New(timer.Keys(s.Store), &c.Idempotency); err != nil {
		return err
	}
	runs := timer.Runs(s.Store)
	if c.Runs != nil {
		runs = c.Runs(runs)
	}
	c.Runner.Logger, c.Runner.Registerer, c.Runner.Events = c.Logger, c.Registerer, s.Bus
	c.Runner.SecretKey = c.SecretKey
	s.Engine, err = runner.New(runs, s.Catalog, s.Catalog, &c.Runner)
	return err
}

// loops builds the schedules' loop and the retention sweeper, which measures the store's
// size when its backend can.
func (s *Stack) loops(c *Config, timer *storemetrics.Timer) (err error) {
	c.Scheduler.Logger = c.Logger
	s.Scheduler = scheduler.New(s.Catalog, s.Engine, s.Idempotency, &c.Scheduler)
	c.Sweeper.Shorter, c.Sweeper.Logger, c.Sweeper.Registerer = s.Catalog.ShorterRetention, c.Logger, c.Registerer
	if sized, ok := s.Store.(interface {
		Size(context.Context) (int64, error)
	}); ok {
		c.Sweeper.Size = sized.Size
	}
	s.Sweeper, err = runner.NewSweeper(timer.Runs(s.Store), c.Sweeper)
	return err
}

// Start connects the events bus to the other processes sharing the store, then starts
// the engine's workers, the schedules' loop and the sweeper.
func (s *Stack) Start(ctx context.Context) error {
	if err := s.Bus.Start(ctx); err != nil {
		return err
	}
	if err := s.Engine.Start(ctx); err != nil {
		return errors.Join(err, s.Bus.Stop(context.WithoutCancel(ctx)))
	}
	s.Scheduler.Start(ctx)
	if err := s.Sweeper.Start(ctx); err != nil {
		return errors.Join(err, s.Stop(context.WithoutCancel(ctx)))
	}
	return nil
}

// Stop ends the work in order, within ctx: the sweeper, the schedules' loop, then the
// engine, which hands the runs in flight back, and last the events bus, which carried
// their notices. The faces on top stop first.
func (s *Stack) Stop(ctx context.Context) error {
	return errors.Join(s.Sweeper.Stop(ctx), s.Scheduler.Stop(ctx), s.Engine.Stop(ctx), s.Bus.Stop(ctx))
}
