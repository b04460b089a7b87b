package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gorunner/gorunner/events"
)

// MaxWaitsPerPrincipal is how many waits (GET /api/runs/{id}?wait=, MCP tool-call and
// gorunner_get_run waits) one principal may hold open at once in a process; one more is
// refused with ErrTooManyWaits.
const MaxWaitsPerPrincipal = 64

// ErrTooManyWaits means the principal already holds MaxWaitsPerPrincipal waits open.
var ErrTooManyWaits = errors.New("too many concurrent waits")

// Reading a run for its waiters is tried readAttempts times, backing off from readBackoff
// and doubling, before the error reaches them: one transient store error must not fail every
// waiter of the run.
const (
	readAttempts = 4
	readBackoff  = 50 * time.Millisecond
)

// broker shares the reading of a run among everything in this process that waits on it:
// each watched run has one feed, which reads the run once when it starts and once per
// events.Run notice (published after every save, here or in another process) and hands
// the state it read to all its followers. N waiters on one run cost one read per change,
// a run waiting on a hook included: the feed looks at the hook's queue before it reads the
// run (feed.begin), and its waiters share that look (feed.rests).
type broker struct {
	get  func(ctx context.Context, id string) (*Run, error)
	next func(ctx context.Context, runID, env, token string) (*Payload, error)
	log  *slog.Logger
	bus  *events.Bus

	mu    sync.Mutex
	feeds map[string]*feed
	waits map[string]int // open waits by principal

	// ended is closed by endWaits: every wait answers at once and every watch ends.
	ended   chan struct{}
	endOnce sync.Once
}

func newBroker(s Store, get func(ctx context.Context, id string) (*Run, error), log *slog.Logger, bus *events.Bus) *broker {
	return &broker{get: get, next: s.NextPayload, log: log, bus: bus, feeds: map[string]*feed{}, waits: map[string]int{},
		ended: make(chan struct{})}
}

// endWaits ends the waits and watches open now and any opened later.
func (b *broker) endWaits() { b.endOnce.Do(func() { close(b.ended) }) }

// feed is the one reader of a run that its followers share.
type feed struct {
	stop      func() // ends the reader and the subscription
	followers int    // guarded by broker.mu
	sub       *events.Subscription

	mu      sync.Mutex
	state   *Run
	err     error
	changed chan struct{} // closed when state or err is replaced
	pushes  uint64        // states handed over by this process's worker (push)
	// listened is pushes when the reader last began to wait for a notice; foreign is set
	// when a push found a notice pending that came after that and before the push's own.
	listened uint64
	foreign  bool

	// A check is a read that looks at the queue of the hook the run last waited on (or hint
	// waits on, before the first read), then reads the run: when the run still waits on
	// that hook, the state read rests there (no payload queued) or is about to move on
	// (queued), for every waiter that joined before the check began (feed.rests).
	hint    *Run          // a state the first follower held, for the first check
	reading bool          // a read is under way: it wakes the waiters when it ends
	checks  uint64        // checks begun
	checked uint64        // the check that state comes from, 0 when none
	queued  bool          // that check found a payload queued
	wanted  chan struct{} // a waiter asks for a check (1 slot)
}

// latest returns the last state read (nil before the first read), the error of that read,
// and a channel closed when a newer one is read.
func (f *feed) latest() (*Run, error, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state, f.err, f.changed
}

func (f *feed) set(r *Run, err error) {
	f.state, f.err, f.checked, f.queued = r, err, 0, false
	f.wake()
}

func (f *feed) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// begin starts a read: it returns how many states were pushed so far, and for a check
// (the run last seen waiting on a hook) that state and the check's number. It takes the
// waiters' request for a check: one asked for after this is served by the next read.
func (f *feed) begin() (seen uint64, last *Run, check uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.wanted:
	default:
	}
	f.reading = true
	last = f.state
	if last == nil {
		last = f.hint
	}
	if last == nil || hookOf(last) == "" {
		return f.pushes, nil, 0
	}
	f.checks++
	return f.pushes, last, f.checks
}

// setRead keeps a state read from the store, unless a push came after the read began
// (pushes moved from seen): the pushed state is then as new as the read or newer. A read
// that was check number check of the hook on which last waited, finding a payload queued
// or not, vouches for the state read when it still waits there.
func (f *feed) setRead(r *Run, err error, seen uint64, last *Run, check uint64, queued bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reading = false
	if f.pushes != seen {
		f.wake() // the waiters who left a check to this read look again
		return
	}
	f.set(r, err)
	if check != 0 && err == nil && hookOf(r) == hookOf(last) {
		f.checked, f.queued = check, queued
	}
}

// since is the number of checks begun so far: a waiter that notes it when it joins takes
// the word of later checks only (see rests).
func (f *feed) since() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks
}

// rests reports whether r, the latest state, waiting on a hook and not due, is what a wait
// that joined when since checks had begun answers: yes when a later check found no payload
// queued. A payload queued then is about to move the run on; a run no later check vouches
// for gets one, asked of the reader unless a read under way or a newer state will wake
// the waiter anyway.
func (f *feed) rests(r *Run, since uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.state != r:
		return false
	case f.checked > since:
		return !f.queued
	case !f.reading:
		select {
		case f.wanted <- struct{}{}:
		default:
		}
	}
	return false
}

// push hands over the state this process's worker just committed, and publishes its
// notice (publish) before the reader can count it: a notice already pending when no push
// came since the reader began to wait is another process's, which the reader must read
// the run for rather than take it for this push's (see read), and the notice of a push
// the reader counted is pending or taken already (see heard).
func (f *feed) push(r *Run, publish func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pushes == f.listened && len(f.sub.C) > 0 {
		f.foreign = true
	}
	f.pushes++
	f.set(r, nil)
	publish()
}

// final reports whether the latest state is final (f.mu held).
func (f *feed) final() bool {
	return f.err == nil && f.state != nil && f.state.Status.Terminal()
}

// listen is for a reader about to wait for the next notice, whose read began when seen
// states were pushed: the notices of the pushes that came during the read are theirs
// (their states are as new as the read or newer), not another process's, so a run saved
// often is not read again for every save made while it was being read. It returns seen
// and whether the latest state is final.
func (f *feed) listen(seen uint64) (n uint64, final bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listened = seen
	return seen, f.final()
}

// heard is, for a reader woken by a notice when n states were pushed, whether it must
// read the run: no push came since (the notice is another process's), or a push found
// another process's notice pending (push), which it clears. When not, the reader listens
// from the pushes so far on, their notices taken as heard: one still pending is dropped,
// so that a run saved often is not read again for a notice its own push explains.
func (f *feed) heard(n uint64) (read bool, now uint64, final bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now, foreign := f.pushes, f.foreign
	f.foreign = false
	if now == n || foreign {
		return true, now, false
	}
	select {
	case <-f.sub.C:
	default:
	}
	f.listened = now
	return false, now, f.final()
}

// follow joins the feed of runID, starting it if nobody follows the run yet; the returned
// func leaves it, and the last to leave stops it. A new feed subscribes to the run's
// notices, then reads the run: no change is missed.
func (b *broker) follow(runID string) (*feed, func()) {
	f, _, leave := b.followFrom(runID, nil)
	return f, leave
}

// followFrom is follow for a caller that holds hint, a state of the run: a feed it starts
// begins with a check of the hook hint waits on, if any. since is the number of checks
// begun when it joined (see feed.rests).
func (b *broker) followFrom(runID string, hint *Run) (f *feed, since uint64, leave func()) {
	f, start, leave := b.join(runID, hint)
	since = f.since()
	start(false)
	return f, since, leave
}

// expect joins the feed of a run this process is about to admit and go on running, before
// the admission write, so that a notice another process sends once the run is written
// (a cancel, a take-over) reaches the feed. The admission write pushes the run's first
// state (broker.saved); start, called after it, starts the feed's reader from that state
// (reading nothing unless a notice calls for it). leave is follow's.
func (b *broker) expect(runID string) (start, leave func()) {
	_, begin, leave := b.join(runID, nil)
	return func() { begin(true) }, leave
}

// join joins the feed of runID, making it (subscribed, not yet reading, with hint) if
// nobody follows the run yet; start starts the reader of a feed made here (seeded: from a
// pushed state) and does nothing for one joined.
func (b *broker) join(runID string, hint *Run) (f *feed, start func(seeded bool), leave func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f = b.feeds[runID]
	start = func(bool) {}
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		sub := b.bus.Subscribe(events.Run(runID)) // before any read: no change is missed
		f = &feed{changed: make(chan struct{}), wanted: make(chan struct{}, 1), hint: hint, sub: sub, stop: func() { cancel(); sub.Close() }}
		b.feeds[runID] = f
		start = func(seeded bool) { go b.read(ctx, runID, f, seeded) }
	}
	f.followers++
	return f, start, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if f.followers--; f.followers == 0 {
			delete(b.feeds, runID)
			f.stop()
		}
	}
}

// read reads run id into f once at start (unless f is seeded: its state was pushed), then
// once per notice of the run that no push explains and once per check its waiters ask for,
// until the run is finished (it changes no more) or nobody follows it. A notice that
// follows a push is taken for that save's own: this process's worker handed its state over
// already (saved), unless the push found another process's notice pending (feed.push). A
// notice from another process that arrives between a push and its own notice is taken for
// that push's; events.ResyncInterval bounds what that can delay.
func (b *broker) read(ctx context.Context, id string, f *feed, seeded bool) {
	var n uint64 // a seeded feed's first notice is its seed's own, unless push saw another
	final := false
	for {
		if !seeded {
			seen, ok := b.readOnce(ctx, id, f)
			if !ok {
				return
			}
			n, final = f.listen(seen)
		}
		seeded = false
		if !b.awaitForeign(ctx, f, n, final) {
			return
		}
	}
}

// readOnce reads run id into f, as a check when f's run was last seen waiting on a hook
// (feed.begin): that hook's queue first, then the run. It reports false when nobody
// follows the run any more, and how many states were pushed when the read began.
func (b *broker) readOnce(ctx context.Context, id string, f *feed) (seen uint64, ok bool) {
	seen, last, check := f.begin()
	queued := check != 0 && b.queued(ctx, last)
	r, err := b.load(ctx, id)
	if ctx.Err() != nil {
		return seen, false
	}
	f.setRead(r, err, seen, last, check, queued)
	return seen, true
}

// queued reports whether a payload is queued for the hook r waits on. A look that fails is
// logged and taken for none, so that r as read next is the answer, as a wait answered a
// hook wait before it looked at the queue: one failed look does not fail its waits.
func (b *broker) queued(ctx context.Context, r *Run) bool {
	_, err := b.next(ctx, r.ID, r.Environment, hookOf(r))
	if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		b.log.Warn("waiting on a run: looking at the payloads queued for it", "run", r.ID, "err", err)
	}
	return err == nil
}

// awaitForeign waits, from n pushes on, for a notice of f's run that no push explains or
// a waiter's request for a check, reporting false when the run is final or nobody follows
// it any more.
func (b *broker) awaitForeign(ctx context.Context, f *feed, n uint64, final bool) bool {
	for !final {
		select {
		case <-f.sub.C:
		case <-f.wanted:
			return true
		case <-ctx.Done():
			return false
		}
		var read bool
		if read, n, final = f.heard(n); read {
			return true
		}
	}
	return false
}

// load reads run id, retrying a failed read (see readAttempts); a run that does not exist
// is not retried.
func (b *broker) load(ctx context.Context, id string) (*Run, error) {
	wait := readBackoff
	for attempt := 1; ; attempt++ {
		r, err := b.get(ctx, id)
		if err == nil || errors.Is(err, ErrNotFound) || attempt == readAttempts {
			return r, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait *= 2
	}
}

// saved hands the state this process's worker just committed to the run's followers here,
// so that they need not read it back from the store, and tells every other follower (other
// engines on the bus, other processes) that the run changed.
func (b *broker) saved(r *Run) {
	b.handOver(r.ID, func() *Run { return cloneRun(r) })
}

// handOver pushes the state state() gives to the feed of run id, if anything here follows
// it, and publishes the run's notice.
func (b *broker) handOver(id string, state func() *Run) {
	publish := func() { b.bus.Publish(events.Run(id)) }
	if f := b.feedOf(id); f != nil && state != nil {
		f.push(state(), publish)
		return
	}
	publish()
}

// pushed is saved for a group commit's snapshot r (see together), which nothing changes
// any more: handed over as it is when whole (a copy of every record), else only told of,
// so that the followers read the run.
func (b *broker) pushed(r *Run, whole bool) {
	state := func() *Run { return r }
	if !whole {
		state = nil
	}
	b.handOver(r.ID, state)
}

// following reports whether anything in this process follows run id.
func (b *broker) following(id string) bool { return b.feedOf(id) != nil }

// feedOf is the feed of run id, nil when nobody here follows it.
func (b *broker) feedOf(id string) *feed {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.feeds[id]
}

// takeWait opens one of principal's waits; release closes it.
func (b *broker) takeWait(principal string) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waits[principal] >= MaxWaitsPerPrincipal {
		return nil, fmt.Errorf("%w: at most %d at once per caller; retry when one has answered", ErrTooManyWaits, MaxWaitsPerPrincipal)
	}
	b.waits[principal]++
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.waits[principal]--; b.waits[principal] == 0 {
			delete(b.waits, principal)
		}
	}, nil
}

// Wait returns run id once it is no longer pending or running, or when maxWait (capped by
// Config.MaxWait) elapses, with its state at that moment. When ctx ends first it returns the
// last state seen and ctx's error. Waiters of one run share its reads (see broker), so the
// returned run may be shared with other callers: it must not be modified.
//
// A run waiting on a hook for which a payload is queued, or for a time that has come (a
// sleep over), has not settled: a worker is about to move it on. Nor has a run whose sleep
// ends before the wait does: it moves on by itself within the wait, so the wait holds for
// it (a retry's backoff and a child run keep the run running, which holds the wait too).
// What needs the outside world answers at once: a hook with nothing queued, whatever its
// timeout, and a sleep that ends after the wait. So a wait that follows an
// accepted resume (Resume answered) never answers with the wait that payload ends, nor a
// wait on an overdue run with the wait it is past: a hook wait is answered only once a
// look at its queue, begun after the wait did, found it empty, and the run read after that
// look still waits there (feed.rests). A payload accepted before the look is taken by then,
// and a save that takes a payload takes it in the same write (SaveOptions.ConsumePayload),
// so a run read afterwards shows it taken.
func (e *Engine) Wait(ctx context.Context, id string, maxWait time.Duration) (*Run, error) {
	return e.wait(ctx, id, nil, maxWait)
}

// WaitFrom is Wait for a caller that holds r, a state of the run it read or admitted: when
// r has ended or waits, not on a hook, for a time that has not come, it is the answer, with
// nothing read or followed; when it waits on a hook, the run's feed, if it starts here,
// looks at that hook's queue before its first read, so that a run resting there costs one
// read.
func (e *Engine) WaitFrom(ctx context.Context, r *Run, maxWait time.Duration) (*Run, error) {
	if e.Settled(r, maxWait) && hookOf(r) == "" {
		return r, nil
	}
	return e.wait(ctx, r.ID, r, maxWait)
}

// wait is Wait, with hint (nil: none) for the run's feed (broker.followFrom).
func (e *Engine) wait(ctx context.Context, id string, hint *Run, maxWait time.Duration) (*Run, error) {
	if maxWait <= 0 {
		return e.Get(ctx, id)
	}
	if r, ok := e.finished.get(id); ok {
		return r, nil // ended: nothing to follow
	}
	f, since, leave := e.broker.followFrom(id, hint)
	defer leave()
	maxWait = e.capWait(maxWait)
	deadline := e.now().Add(maxWait)
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	expired := false
	for {
		r, err, changed := f.latest()
		switch {
		case err != nil:
			return nil, err
		case r != nil && expired:
			return r, nil
		case r != nil && r.Status.Settled() && !e.dueBy(r, deadline) && (hookOf(r) == "" || f.rests(r, since)):
			return r, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			expired = true
		case <-e.broker.ended:
			if r == nil {
				return e.Get(ctx, id)
			}
			return r, nil
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
}

// EndWaits answers every wait (Wait, WaitFrom) at once with the run as it stands, and ends
// every Watch, now and from now on: a process shutting down calls it before it waits for
// its requests to end, so that long waits and event streams do not hold the shutdown.
func (e *Engine) EndWaits() { e.broker.endWaits() }

// Settled reports whether r, as it stands, is what a wait of maxWait on it answers without
// following it: ended, or waiting, but not for a time that comes within the wait (dueBy).
// A run waiting on a hook is settled here; Wait also looks at the hook's queue.
func (e *Engine) Settled(r *Run, maxWait time.Duration) bool {
	return r.Status.Settled() && !e.dueBy(r, e.now().Add(e.capWait(maxWait)))
}

// capWait is maxWait bounded by Config.MaxWait.
func (e *Engine) capWait(maxWait time.Duration) time.Duration { return min(maxWait, e.cfg.MaxWait) }

// dueBy reports whether r waits for a time that comes by deadline, the end of a wait: a
// sleep that ends by then (or a time that has come: its hook or ask timed out, or it was
// woken). A worker moves it on by itself within the wait, so it has not settled for that
// wait. A hook's timeout counts only once it has come: until then the hook waits for the
// outside world, which the wait's answer must tell.
func (e *Engine) dueBy(r *Run, deadline time.Time) bool {
	if r.Status != StatusWaiting || r.WakeAt.IsZero() {
		return false
	}
	if hookOf(r) != "" {
		deadline = e.now()
	}
	return !r.WakeAt.After(deadline)
}

// hookOf is the token of the hook run r waits on, or "" when it does not wait on one.
func hookOf(r *Run) string {
	if r.Status != StatusWaiting || r.WaitingOn == nil {
		return ""
	}
	return r.WaitingOn.Hook
}

// ReserveWait opens one of principal's MaxWaitsPerPrincipal waits, to hold while
// waiting on runs (Wait) on its behalf; release closes it. One more → ErrTooManyWaits.
func (e *Engine) ReserveWait(principal string) (release func(), err error) {
	return e.broker.takeWait(principal)
}

// Watch streams the states of run id, one for every change seen (a step that starts or
// finishes, a status change), ending with its final state; the channel is closed after that
// or when stop is called. Consumers such as MCP progress notifications count finished steps.
func (e *Engine) Watch(id string) (<-chan *Run, func()) {
	out := make(chan *Run, 8)
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		defer close(out)
		e.watch(ctx, id, out)
	}()
	return out, stop
}

func (e *Engine) watch(ctx context.Context, id string, out chan<- *Run) {
	f, leave := e.broker.follow(id)
	defer leave()
	last := ""
	for {
		r, err, changed := f.latest()
		if err != nil {
			return
		}
		if r != nil {
			if fp := fingerprint(r); fp != last {
				last = fp
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
			}
			if r.Status.Terminal() {
				return
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-e.broker.ended:
			return
		}
	}
}

// fingerprint sums up what watchers care about: the run's and its steps' statuses, and
// the count of answers that did not fit a hook's question (the MCP task of a run waiting
// on a hook no longer asks after MaxAskAttempts of them).
func fingerprint(r *Run) string {
	b := []byte(r.Status)
	for _, s := range r.Steps {
		b = append(b, '/')
		b = append(b, s.Status...)
	}
	if r.AskMisses.N > 0 {
		b = fmt.Appendf(b, "?%d:%d", r.AskMisses.Step, r.AskMisses.N)
	}
	return string(b)
}

// Events returns the engine's bus (Config.Events), for the other parts of the process
// that wait on changes, such as the MCP server's tool catalog.
func (e *Engine) Events() *events.Bus { return e.cfg.Events }
