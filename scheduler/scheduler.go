// Package scheduler starts the runs of published workflows' schedules (SPEC §2): one loop
// per process looks at the clock, and each tick it finds due is a keyed admission
// (admission.Start) with the key schedule:<index>:<tick> owned by the workflow, so that
// however many processes share the store, the keyed-replay rule starts exactly one run
// per tick: the others replay its answer.
package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/gorunner/gorunner/admission"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schedule"
	"github.com/gorunner/gorunner/schemas"
)

// DefaultInterval is how often a scheduler looks at the clock: a tick starts its run
// within it.
const DefaultInterval = 250 * time.Millisecond

// MaxTicksPerPass bounds the ticks of one schedule one look at the clock starts: a process
// that stalled (its clock jumped, it was suspended) starts the latest MaxTicksPerPass of
// the ticks it passed over, not all of them.
const MaxTicksPerPass = 60

// Catalog is what the scheduler reads of the catalog (catalog.Service).
type Catalog interface {
	CatalogVersion(ctx context.Context) (int64, error)
	List(ctx context.Context, p catalog.ListWorkflowsParams) ([]*catalog.Workflow, string, error)
	Version(ctx context.Context, workflowID string, version int) (*catalog.Version, error)
}

// Config tunes a Scheduler; nil or zero fields mean defaults.
type Config struct {
	// Now is the clock, the engine's (runner.Config.Now); default time.Now.
	Now func() time.Time
	// Interval is how often the loop looks at the clock; default DefaultInterval.
	Interval time.Duration
	// Logger receives the scheduler's logs; default slog.Default().
	Logger *slog.Logger
}

func (c *Config) withDefaults() Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Interval <= 0 {
		out.Interval = DefaultInterval
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	return out
}

// Scheduler starts the runs of the schedules of published versions, in one process.
type Scheduler struct {
	catalog Catalog
	engine  *runner.Engine
	keys    *idempotency.Service
	cfg     Config

	mu      sync.Mutex
	started time.Time          // the first look at the clock: ticks before it were missed
	loaded  int64              // the catalog version entries were read at; -1 before
	entries map[entryID]*entry // the schedules of published versions
	stop    context.CancelFunc
	done    chan struct{}
}

// entryID names one schedule of one published version.
type entryID struct {
	workflowID string
	version    int
	index      int
}

// entry is a schedule being followed.
type entry struct {
	name      string // the workflow's name, which keyed replay fingerprints
	spec      *schedule.Spec
	input     json.RawMessage
	catchUp   string
	published time.Time
	// since is when the scheduler last looked at this schedule: ticks after it are due.
	// Zero before its first look, which applies catchUp.
	since time.Time
}

// New returns a scheduler admitting runs through engine and keys.
func New(cat Catalog, engine *runner.Engine, keys *idempotency.Service, cfg *Config) *Scheduler {
	return &Scheduler{catalog: cat, engine: engine, keys: keys, cfg: cfg.withDefaults(), loaded: -1}
}

// Start starts the loop; Stop ends it.
func (s *Scheduler) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop, s.done = cancel, make(chan struct{})
	go s.loop(ctx, s.done)
}

// Stop ends the loop and waits for it, or for ctx.
func (s *Scheduler) Stop(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	s.stop()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Scheduler) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if err := s.Pass(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("schedules: reading the published schedules", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass looks at the clock once: it rereads the published schedules if the catalog moved,
// and starts the run of every tick due since the last look (the first look applies each
// schedule's catchUp). The loop calls it every Interval; a test may call it directly.
func (s *Scheduler) Pass(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now().UTC()
	if s.started.IsZero() {
		s.started = now
	}
	if err := s.load(ctx); err != nil {
		return err
	}
	ids := make([]entryID, 0, len(s.entries))
	for id := range s.entries {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b entryID) int {
		return cmp.Or(cmp.Compare(a.workflowID, b.workflowID), cmp.Compare(a.index, b.index))
	})
	for _, id := range ids {
		e := s.entries[id]
		for _, tick := range s.due(e, now) {
			s.fire(ctx, id, e, tick)
		}
		e.since = now
	}
	return nil
}

// due are e's ticks to start at now, oldest first.
func (s *Scheduler) due(e *entry, now time.Time) []time.Time {
	if e.since.IsZero() {
		since := e.published
		if e.catchUp == schemas.CatchUpNone && s.started.After(since) {
			since = s.started
		}
		if tick, ok := e.spec.Latest(now, since); ok {
			return []time.Time{tick}
		}
		return nil
	}
	var ticks []time.Time
	for t := e.spec.Next(e.since); !t.IsZero() && !t.After(now); t = e.spec.Next(t) {
		if ticks = append(ticks, t); len(ticks) > MaxTicksPerPass {
			ticks = ticks[1:]
		}
	}
	return ticks
}

// KeyPrefix starts the keys of schedules' ticks, which share their workflow's scope with
// its webhook's keys: a webhook call may not use it (api refuses it), or it could take a
// tick's key before the tick and stop the tick's run.
const KeyPrefix = "schedule:"

// Key is the idempotency key of a schedule's tick, owned by its workflow
// (idempotency.WorkflowScope).
func Key(index int, tick time.Time) string {
	return fmt.Sprintf("%s%d:%s", KeyPrefix, index, tick.UTC().Format(time.RFC3339))
}

// fire admits the run of e's tick, unless another process did: the key then replays.
func (s *Scheduler) fire(ctx context.Context, id entryID, e *entry, tick time.Time) {
	// No starter: the schedule's run acts for the principal that published the version
	// (runner.authorityOf), as a webhook's does (SPEC §6).
	req := admission.Request{
		Workflow: id.workflowID, Name: e.name, Environment: runner.EnvProduction, Input: e.input,
		RunOnly: true, Keyed: true, Key: Key(id.index, tick), Scope: idempotency.WorkflowScope(id.workflowID),
		Policy:  idempotency.Policy{EvictOldest: true},
		Trigger: runner.ScheduleTrigger(id.index, tick),
	}
	res, err := admission.Start(ctx, s.engine, s.keys, req)
	switch {
	case errors.Is(err, idempotency.ErrInProgress), errors.Is(err, idempotency.ErrKeyMismatch):
		return // another process is starting it, or started it under an earlier version
	case err != nil:
		s.cfg.Logger.Error("schedules: starting a tick's run", "workflow", e.name, "schedule", id.index, "tick", tick, "err", err)
		return
	}
	if !res.Replayed {
		s.cfg.Logger.Debug("schedules: started", "workflow", e.name, "schedule", id.index, "tick", tick, "run", res.RunID)
	}
}

// load rereads the schedules of the published versions when the catalog version moved
// since it last did. A schedule already followed keeps where it stands; a new one (a
// version published since) starts with its catchUp; one no longer published goes.
func (s *Scheduler) load(ctx context.Context) error {
	at, err := s.catalog.CatalogVersion(ctx)
	if err != nil || at == s.loaded {
		return err
	}
	next := map[entryID]*entry{}
	cursor := ""
	for {
		wfs, more, err := s.catalog.List(ctx, catalog.ListWorkflowsParams{PublishedOnly: true, Page: catalog.Page{Limit: limits.MaxPage, Cursor: cursor}})
		if err != nil {
			return fmt.Errorf("listing published workflows: %w", err)
		}
		for _, w := range wfs {
			if err := s.loadWorkflow(ctx, w, next); err != nil {
				return err
			}
		}
		if cursor = more; cursor == "" {
			break
		}
	}
	s.entries, s.loaded = next, at
	return nil
}

// loadWorkflow adds the schedules of w's published version to next.
func (s *Scheduler) loadWorkflow(ctx context.Context, w *catalog.Workflow, next map[entryID]*entry) error {
	if !w.Published || w.LatestVersion == 0 {
		return nil
	}
	v, err := s.catalog.Version(ctx, w.ID, w.LatestVersion)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("reading version %d of workflow %s: %w", w.LatestVersion, w.Name, err)
	}
	def, err := schemas.Decode(v.Definition)
	if err != nil {
		s.cfg.Logger.Error("schedules: decoding a published version", "workflow", w.Name, "version", v.Version, "err", err)
		return nil
	}
	for i := range def.Schedules {
		id := entryID{workflowID: w.ID, version: v.Version, index: i}
		if old, ok := s.entries[id]; ok {
			old.name, next[id] = w.Name, old
			continue
		}
		sc := &def.Schedules[i]
		spec, err := sc.Spec()
		if err != nil { // published before a rule it breaks: it never ticks
			s.cfg.Logger.Error("schedules: a published schedule does not parse", "workflow", w.Name, "schedule", i, "err", err)
			continue
		}
		next[id] = &entry{name: w.Name, spec: spec, input: sc.RunInput(), catchUp: sc.CatchUp, published: v.PublishedAt}
	}
	return nil
}
