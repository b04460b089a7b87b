// Package runner is GoRunner's durable engine: it admits runs (with atomic start tokens),
// works them with leased workers, executes their steps one at a time, committing the start,
// attempts, output or error of each step with effects before the run moves on (steps
// without effects, which a restart recomputes identically, ride along with the next such
// commit; see saveProgress), and keeps every wait (sleep, hook, retry backoff, child run) as
// a wake-up time in the store, so a run survives a crash or restart and continues after its
// last committed step, on this process or another sharing the store.
//
// Defaults the definition format leaves open: http steps make up to 3 attempts unless
// retry says otherwise, every other kind 1; backoff starts at 1s, doubles, caps at 1m, with
// jitter, and honours Retry-After. A step's timeout bounds each attempt of http steps
// (default 30s) and custom kinds, and is the default timeout of a hook step. A workflow step
// starts its child in the parent's environment: production runs call published versions,
// test runs call drafts. While a run waits on a hook or a sleep its status is waiting; while
// it waits for a child run, an adopted run or a retry it stays running.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/internal/seal"
)

// Workflows resolves a workflow to the definition a new run executes.
type Workflows interface {
	// Resolve finds a workflow by ID or name: in production its latest published version,
	// in test its draft. Unknown → an error matching ErrWorkflowNotFound; no published
	// version → ErrNotPublished.
	Resolve(ctx context.Context, idOrName, env string) (*Target, error)
}

// Target is what a run of a workflow executes.
type Target struct {
	WorkflowID string
	Name       string
	// Version is the published version, 0 for the draft of a test run.
	Version    int
	Definition json.RawMessage
	// Publisher is who published the version: its runs act within that principal's scopes
	// (SPEC §6). Nil for a draft and for a version published before publishers were
	// recorded.
	Publisher *auth.Principal
	// CatalogVersion, when not 0, is the catalog version (catalog.Store.CatalogVersion)
	// this answer was current at. A run admitted from it is written only while the catalog
	// still stands there (CreateRunParams.CatalogVersion), so an answer kept from an earlier
	// resolution (KeptWorkflows) admits nothing once the catalog moved.
	CatalogVersion int64
}

// KeptWorkflows is Workflows that keeps its production answers: Kept answers again what
// Resolve last answered for idOrName in env, with its Target.CatalogVersion, reading
// nothing and checking nothing (false: none kept). The engine admits from it with the
// version checked in the admission's one write, and resolves again when that refuses.
type KeptWorkflows interface {
	Workflows
	Kept(idOrName, env string) (*Target, bool)
}

// Credentials gives http steps the connections they name.
type Credentials interface {
	// Credential returns the named connection; an unknown connection is an error and the
	// step fails without retry.
	Credential(ctx context.Context, connection string) (*Credential, error)
}

// Engine admits, works and answers about runs. Every process sharing a store runs one.
type Engine struct {
	store     Store
	workflows Workflows
	creds     Credentials
	cfg       Config
	client    *http.Client
	mcp       *mcpSessions // the sessions of mcp steps
	log       *slog.Logger
	defs      *defCache
	hosts     *hostCache
	kinds     kindTable
	broker    *broker
	finished  endedRuns // the ended runs Get answers from memory
	metrics   *metrics
	cursors   *seal.Box     // seals the cursors List hands out
	poke      chan struct{} // a worker slot came free while runs may be due; coalesced

	mu     sync.Mutex
	held   map[string]context.CancelCauseFunc // runs this engine works, by ID
	leases map[string]Lease                   // leases of held runs, once the store wrote them
	// away is how many held runs gave their worker slot back while they wait on the network
	// (withoutSlot) and have not taken one again; slotWait are those of them waiting to take
	// one, first come first served, before any claim (each closed once it has one).
	away      int
	slotWait  []chan struct{}
	httpBound httpBounds
	// backlog says runs may be due that no slot here took: a claim or a notice of due runs
	// found every slot taken, a claim filled every free slot, or an admission found none
	// free. Only then does a slot coming free start a claim.
	backlog   bool
	awaiters  map[string]map[string]bool // run ID → runs waiting for it to end
	workers   sync.WaitGroup
	stopLoops context.CancelFunc
	workCtx   context.Context // what workers run under while started; nil when stopped
	loopsDone sync.WaitGroup
	stopBeat  context.CancelFunc
	beatDone  chan struct{}
}

// New returns an engine over store. A nil cfg means defaults; creds may be nil when no
// workflow uses connections.
func New(store Store, workflows Workflows, creds Credentials, cfg *Config) (*Engine, error) {
	if store == nil || workflows == nil {
		return nil, errors.New("runner: a store and a workflow resolver are required")
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(c.Registerer)
	if err != nil {
		return nil, err
	}
	cursors, err := newCursorBox(c.SecretKey)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		store:     store,
		workflows: workflows,
		creds:     creds,
		cfg:       c,
		client:    newHTTPClient(c.Egress),
		mcp:       newMCPSessions(c.Logger),
		log:       c.Logger,
		defs:      newDefCache(),
		hosts:     newHostCache(),
		kinds:     newKindTable(c.Kinds),
		metrics:   m,
		cursors:   cursors,
		poke:      make(chan struct{}, 1),
		held:      map[string]context.CancelCauseFunc{},
		leases:    map[string]Lease{},
		httpBound: newHTTPBounds(c.HTTPConcurrency, c.HTTPPerWorkflow),
		awaiters:  map[string]map[string]bool{},
	}
	e.broker = newBroker(e.store, e.getRun, e.log, c.Events)
	return e, nil
}

// Start starts the worker loop and the lease heartbeat. They run until Stop.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopLoops != nil {
		return errors.New("runner: engine already started")
	}
	loopCtx, stopLoops := context.WithCancel(ctx)
	beatCtx, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	e.stopLoops, e.stopBeat, e.beatDone = stopLoops, stopBeat, make(chan struct{})
	e.workCtx = context.WithoutCancel(ctx)
	e.loopsDone.Add(1)
	go func() {
		defer e.loopsDone.Done()
		e.claimLoop(loopCtx, context.WithoutCancel(ctx))
	}()
	go func() {
		defer close(e.beatDone)
		e.heartbeat(beatCtx)
	}()
	return nil
}

// Stop stops claiming runs and lets the steps in flight finish until ctx is done; then it
// interrupts them (their attempt is not recorded, so another worker makes it again with the
// same stepId) and releases every lease this engine holds, so another process continues
// those runs at once. Completed steps are never lost.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	stopLoops, stopBeat := e.stopLoops, e.stopBeat
	e.workCtx = nil // admissions stop starting runs here before the workers are awaited
	e.mu.Unlock()
	if stopLoops == nil {
		return nil
	}
	stopLoops()
	e.loopsDone.Wait()
	drained := make(chan struct{})
	go func() {
		e.workers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-ctx.Done():
		e.interruptAll(errShutdown)
		<-drained
	}
	stopBeat()
	<-e.beatDone
	e.mcp.closeAll()
	e.mu.Lock()
	e.stopLoops, e.stopBeat = nil, nil
	e.mu.Unlock()
	return nil
}

func (e *Engine) interruptAll(cause error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, cancel := range e.held {
		cancel(cause)
	}
}

// interrupt cancels the context of a run this engine works, if it does.
func (e *Engine) interrupt(runID string, cause error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cancel, ok := e.held[runID]; ok {
		cancel(cause)
	}
}

// wake tells the claim loops of this process and, through Config.Events, of every other
// process sharing the store to look for due runs now.
func (e *Engine) wake() {
	e.cfg.Events.Publish(events.Due)
}

// pokeLocal tells the local claim loop to look for due runs now (a worker slot came free
// while there is a backlog).
func (e *Engine) pokeLocal() {
	select {
	case e.poke <- struct{}{}:
	default:
	}
}

func (e *Engine) now() time.Time { return e.cfg.Now().UTC() }

// claimLoop claims due runs whenever a slot is free and something may be due: on an
// events.Due notice (a start, resume or wake-up on any process), when a local worker ends,
// or every PollInterval (wake-up times coming due). Workers get workCtx, which Stop does not
// cancel, so steps in flight can finish.
func (e *Engine) claimLoop(ctx, workCtx context.Context) {
	due := e.cfg.Events.Subscribe(events.Due)
	defer due.Close()
	ticker := time.NewTicker(e.cfg.PollInterval)
	defer ticker.Stop()
	for {
		e.claim(ctx, workCtx)
		select {
		case <-ctx.Done():
			return
		case <-e.poke:
		case <-due.C:
		case <-ticker.C:
		}
	}
}

func (e *Engine) claim(ctx, workCtx context.Context) {
	for ctx.Err() == nil {
		free := e.freeSlots()
		if free == 0 {
			e.setBacklog(true)
			return
		}
		now := e.now()
		runs, err := e.store.ClaimRuns(ctx, ClaimRunsParams{
			Owner: e.cfg.Owner, Now: now, LeaseUntil: now.Add(e.cfg.LeaseTTL), Limit: free,
		})
		if err != nil {
			if ctx.Err() == nil {
				e.log.Error("claiming runs", "err", err)
			}
			return
		}
		for _, c := range runs {
			e.launch(workCtx, c)
		}
		e.setBacklog(len(runs) == free)
		if len(runs) < free {
			return
		}
	}
}

func (e *Engine) setBacklog(b bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.backlog = b
}

func (e *Engine) freeSlots() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.freeLocked()
}

// freeLocked is how many worker slots a claim or an admission may take: those no held run
// has, less those promised to runs waiting to take one again. e.mu is held.
func (e *Engine) freeLocked() int {
	return max(e.cfg.Concurrency-e.takenLocked()-len(e.slotWait), 0)
}

// takenLocked is how many worker slots held runs have. e.mu is held.
func (e *Engine) takenLocked() int { return len(e.held) - e.away }

// withoutSlot runs wait, which waits on the network for held run runID, with the run's
// worker slot given back meanwhile, so that runs waiting on slow hosts do not keep the
// others from being worked; the run stays held (its lease renewed, interruptible). Then it
// takes a slot again, waiting for one if needed, unless ctx ends first (the worker then
// ends its pass with a slot counted as its own, over Concurrency if need be).
func (e *Engine) withoutSlot(ctx context.Context, runID string, wait func()) {
	e.mu.Lock()
	if _, ok := e.held[runID]; !ok {
		e.mu.Unlock()
		wait()
		return
	}
	e.away++
	e.grantLocked()
	backlog := e.backlog
	e.mu.Unlock()
	if backlog {
		e.pokeLocal()
	}
	wait()
	e.retakeSlot(ctx)
}

// retakeSlot gives a held run that gave its slot back a slot again when its turn among the
// runs waiting for one comes (at once when none waits and one is free), or when ctx ends.
func (e *Engine) retakeSlot(ctx context.Context) {
	granted := make(chan struct{})
	e.mu.Lock()
	e.slotWait = append(e.slotWait, granted)
	e.grantLocked()
	e.mu.Unlock()
	select {
	case <-granted:
	case <-ctx.Done():
		e.mu.Lock()
		if i := slices.Index(e.slotWait, granted); i >= 0 { // not granted meanwhile
			e.slotWait = slices.Delete(e.slotWait, i, i+1)
			e.away--
		}
		e.mu.Unlock()
	}
}

// grantLocked hands the slots free to the runs waiting to take one again, in turn. e.mu is
// held.
func (e *Engine) grantLocked() {
	for len(e.slotWait) > 0 && e.takenLocked() < e.cfg.Concurrency {
		close(e.slotWait[0])
		e.slotWait = e.slotWait[1:]
		e.away--
	}
}

// launch starts a worker on a claimed run. A run already worked here (claimed again because
// the clock jumped past its lease) is left to its worker.
func (e *Engine) launch(ctx context.Context, c Claimed) {
	e.mu.Lock()
	runCtx, ok := e.holdLocked(ctx, c.Run.ID)
	e.mu.Unlock()
	if ok {
		e.start(runCtx, c.Lease, func() bool { return e.work(runCtx, c) })
	}
}

// reserve takes a worker slot for a run about to be admitted with this engine's lease; ok
// is false when the engine is stopped or every slot is taken (the run is then left to a
// claim). A reservation ends with its pass (endPass), or at once when the run was not written.
func (e *Engine) reserve(runID string) (context.Context, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.workCtx == nil {
		return nil, false
	}
	if e.freeLocked() == 0 {
		e.backlog = true
		return nil, false
	}
	return e.holdLocked(e.workCtx, runID)
}

// working reports whether the engine is started: it works runs.
func (e *Engine) working() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.workCtx != nil
}

// holdLocked counts runID as worked here, under a context its heartbeat or Stop can
// interrupt; false when it already is. e.mu is held.
func (e *Engine) holdLocked(ctx context.Context, runID string) (context.Context, bool) {
	if _, ok := e.held[runID]; ok {
		return nil, false
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	e.held[runID] = cancel
	e.workers.Add(1)
	return runCtx, true
}

// start runs pass, a worker's pass over a held run under lease, on a goroutine of its own,
// renewing the lease meanwhile, then gives up its slot (and its lease, unless pass reports
// the run keeps it).
func (e *Engine) start(runCtx context.Context, lease Lease, pass func() bool) {
	e.mu.Lock()
	e.leases[lease.RunID()] = lease
	e.mu.Unlock()
	go func() {
		e.endPass(lease, lease.RunID(), pass())
	}()
}

// endPass gives up the slot of held run runID after a pass over it, and lease unless keep.
func (e *Engine) endPass(lease Lease, runID string, keep bool) {
	e.mu.Lock()
	cancel := e.held[runID]
	delete(e.held, runID)
	delete(e.leases, runID)
	e.grantLocked()
	backlog := e.backlog
	e.mu.Unlock()
	cancel(nil)
	if !keep {
		e.release(lease)
	}
	e.workers.Done()
	if backlog {
		e.pokeLocal()
	}
}

func (e *Engine) release(lease Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.store.ReleaseRun(ctx, lease); err != nil && !errors.Is(err, ErrLeaseLost) {
		e.log.Error("releasing run", "run", lease.RunID(), "err", err)
	}
}

// heartbeat renews the leases of the runs this engine works every LeaseTTL/3 (at least
// every second, so that a cancel requested by another process is acted on promptly), and
// interrupts those whose lease was lost or whose cancel was requested.
func (e *Engine) heartbeat(ctx context.Context) {
	ticker := time.NewTicker(min(e.cfg.LeaseTTL/3, time.Second))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		e.renew(ctx)
	}
}

func (e *Engine) renew(ctx context.Context) {
	e.mu.Lock()
	// A run reserved for an admission not yet written has no lease here to renew.
	leases := slices.Collect(maps.Values(e.leases))
	e.mu.Unlock()
	if len(leases) == 0 {
		return
	}
	lost, cancelled, err := e.store.RenewLeases(ctx, RenewLeasesParams{
		Leases: leases, Until: e.now().Add(e.cfg.LeaseTTL),
	})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("renewing leases", "err", err)
		}
		return
	}
	for _, id := range lost {
		e.interrupt(id, errLeaseLost)
	}
	for _, id := range cancelled {
		e.interrupt(id, errCancelRequested)
	}
}

// awaitEnd registers that waiter waits for target to end, so that when target ends on this
// process the waiter is woken at once rather than at its next durable re-check.
func (e *Engine) awaitEnd(waiter, target string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.awaiters[target] == nil {
		e.awaiters[target] = map[string]bool{}
	}
	e.awaiters[target][waiter] = true
}

// awaited forgets that waiter waits for target, which it found ended.
func (e *Engine) awaited(waiter, target string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.awaiters[target], waiter)
	if len(e.awaiters[target]) == 0 {
		delete(e.awaiters, target)
	}
}

// ended counts r, which just ended here (kind names the kind of each of its steps), and
// wakes the runs waiting for it and its parent.
func (e *Engine) ended(ctx context.Context, r *Run, kind func(step int) string) {
	e.metrics.ended(r, kind)
	e.mu.Lock()
	waiters := e.awaiters[r.ID]
	delete(e.awaiters, r.ID)
	e.mu.Unlock()
	for id := range waiters {
		if err := e.store.WakeRun(ctx, id, e.now()); err != nil && !errors.Is(err, ErrNotFound) {
			e.log.Error("waking a run waiting for another", "run", id, "ended", r.ID, "err", err)
		}
	}
	// The end may have promoted a queued run of the same key (queue.go): claim it here.
	if len(waiters) > 0 || r.ParentRunID != "" || r.Concurrency != nil {
		e.wake()
	}
}
