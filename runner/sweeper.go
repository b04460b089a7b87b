package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Retention's bounds and defaults (SPEC §2).
const (
	// DefaultRetention is how long ended runs are kept unless `serve --retention` says.
	DefaultRetention = 30 * 24 * time.Hour
	// MaxSweepBatch bounds the runs one batch of a sweep examines, each batch one short
	// transaction (or script) of the store, so that a sweep never holds the hot path.
	MaxSweepBatch = 500
	// SweepInterval is how often a Sweeper sweeps: a run past its retention is deleted
	// within this (and one sweep's time) of the moment it is.
	SweepInterval = 2 * time.Second
)

// A Sweeper's batches are smaller than the bound and it rests between them, so that a
// backlog (a first sweep of a large store, a retention cut shorter) shares the store with
// the hot path instead of holding it: SQLite's write lock and a Redis script stop every
// other write while a batch runs. sweepBatch runs a batch examine; after each batch the
// sweeper waits sweepRest times as long as the batch took, so a sweep takes at most
// 1/(1+sweepRest) of the store's time (issue #30: tools/call p50 within 1.1× while a
// backlog is swept, BenchmarkSweepImpact).
const (
	sweepBatch = 50
	sweepRest  = 4
)

// SweeperConfig tunes a Sweeper.
type SweeperConfig struct {
	// Retention is how long after its end a run is deleted; 0 keeps every run.
	Retention time.Duration
	// Shorter, when set, gives the workflows whose runs are kept less than Retention (a
	// definition's `retention`), by workflow ID; read at every sweep.
	Shorter func(ctx context.Context) (map[string]time.Duration, error)
	// Size, when set, measures the store in bytes after each sweep, for the
	// gorunner_store_bytes gauge.
	Size func(ctx context.Context) (int64, error)
	// Now is the clock; default time.Now. It must be the engine's.
	Now func() time.Time
	// Interval is how often it sweeps; default SweepInterval.
	Interval time.Duration
	// Logger receives the sweeps' failures; default slog.Default().
	Logger *slog.Logger
	// Registerer receives the sweeper's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Sweeper deletes the ended runs past their retention, in batches of at most MaxSweepBatch
// runs examined, every Interval, off the hot path: each process runs one, and several
// sweeping one store at once only share the work.
type Sweeper struct {
	store   Store
	c       SweeperConfig
	deleted prometheus.Counter
	size    prometheus.Gauge

	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

// NewSweeper makes a sweeper of s; Start starts it.
func NewSweeper(s Store, c SweeperConfig) (*Sweeper, error) {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Interval == 0 {
		c.Interval = SweepInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	w := &Sweeper{store: s, c: c,
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gorunner_runs_deleted_total",
			Help: "Ended runs this process deleted past their retention.",
		}),
		size: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gorunner_store_bytes",
			Help: "The store's size in bytes, as measured after the last sweep.",
		}),
	}
	if c.Registerer != nil {
		for _, m := range []prometheus.Collector{w.deleted, w.size} {
			if err := c.Registerer.Register(m); err != nil {
				return nil, fmt.Errorf("registering sweeper metrics: %w", err)
			}
		}
	}
	return w, nil
}

// Start sweeps every Interval until Stop. A sweeper without retention (0 and no Shorter)
// sweeps nothing.
func (w *Sweeper) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		return errors.New("sweeper already started")
	}
	ctx, w.stop = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	go w.loop(ctx)
	return nil
}

// Stop ends the sweeps and waits, up to ctx, for the batch under way.
func (w *Sweeper) Stop(ctx context.Context) error {
	w.mu.Lock()
	stop, done := w.stop, w.done
	w.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Sweeper) loop(ctx context.Context) {
	defer close(w.done)
	tick := time.NewTicker(w.c.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
				w.c.Logger.Warn("sweeping ended runs", "err", err)
			}
		}
	}
}

// Sweep deletes every ended run past its retention at Now, and reports how many.
func (w *Sweeper) Sweep(ctx context.Context) (int, error) {
	now := w.c.Now()
	total := 0
	if w.c.Retention > 0 {
		n, err := w.sweep(ctx, SweepParams{EndedBefore: now.Add(-w.c.Retention)})
		total += n
		if err != nil {
			return total, err
		}
	}
	n, err := w.sweepShorter(ctx, now)
	total += n
	if err == nil && w.c.Size != nil {
		var size int64
		if size, err = w.c.Size(ctx); err == nil {
			w.size.Set(float64(size))
		}
	}
	return total, err
}

// sweepShorter sweeps the workflows whose definitions keep their runs less long.
func (w *Sweeper) sweepShorter(ctx context.Context, now time.Time) (int, error) {
	if w.c.Shorter == nil {
		return 0, nil
	}
	shorter, err := w.c.Shorter(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the workflows' retention: %w", err)
	}
	total := 0
	for id, d := range shorter {
		if d <= 0 || (w.c.Retention > 0 && d >= w.c.Retention) {
			continue
		}
		n, err := w.sweep(ctx, SweepParams{WorkflowID: id, EndedBefore: now.Add(-d)})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// sweep walks p to its end in batches of sweepBatch, resting after each (sweepRest).
func (w *Sweeper) sweep(ctx context.Context, p SweepParams) (int, error) {
	p.Limit = sweepBatch
	total := 0
	for {
		start := time.Now()
		res, err := w.store.SweepEnded(ctx, p)
		if err != nil {
			return total, err
		}
		total += res.Deleted
		w.deleted.Add(float64(res.Deleted))
		if res.Next == nil {
			return total, nil
		}
		p.After = res.Next
		rest := time.NewTimer(sweepRest * time.Since(start))
		select {
		case <-ctx.Done():
			rest.Stop()
			return total, ctx.Err()
		case <-rest.C:
		}
	}
}
