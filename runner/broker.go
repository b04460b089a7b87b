package runner

import (
	"context"
	"errors"
	"fmt"
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
// but for a run waiting on a hook, which each waiter looks at itself (Engine.resting: the
// hook's queue, then the run, unshared and not retried).
type broker struct {
	get func(ctx context.Context, id string) (*Run, error)
	bus *events.Bus

	mu    sync.Mutex
	feeds map[string]*feed
	waits map[string]int // open waits by principal
}

func newBroker(get func(ctx context.Context, id string) (*Run, error), bus *events.Bus) *broker {
	return &broker{get: get, bus: bus, feeds: map[string]*feed{}, waits: map[string]int{}}
}

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
}

// latest returns the last state read (nil before the first read), the error of that read,
// and a channel closed when a newer one is read.
func (f *feed) latest() (*Run, error, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state, f.err, f.changed
}

func (f *feed) set(r *Run, err error) {
	f.state, f.err = r, err
	close(f.changed)
	f.changed = make(chan struct{})
}

// setRead keeps a state read from the store, unless a push came after the read began
// (pushes moved from seen): the pushed state is then as new as the read or newer.
func (f *feed) setRead(r *Run, err error, seen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pushes == seen {
		f.set(r, err)
	}
}

// push hands over the state this process's worker just committed. Its own notice is
// published after it (broker.saved), so a notice already pending when no push came since
// the reader began to wait is another process's: the reader must read the run for it
// rather than take it for this push's (see read).
func (f *feed) push(r *Run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pushes == f.listened && len(f.sub.C) > 0 {
		f.foreign = true
	}
	f.pushes++
	f.set(r, nil)
}

// pushed returns how many states were pushed so far, and whether the latest state is final.
func (f *feed) pushed() (n uint64, final bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pushes, f.err == nil && f.state != nil && f.state.Status.Terminal()
}

// listen is pushed for a reader about to wait for the next notice.
func (f *feed) listen() (n uint64, final bool) {
	n, final = f.pushed()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listened = n
	return n, final
}

// noticed returns, for a reader woken by a notice, how many states were pushed so far and
// whether a push found another process's notice pending (push), which it clears.
func (f *feed) noticed() (n uint64, foreign bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, foreign, f.foreign = f.pushes, f.foreign, false
	return n, foreign
}

// follow joins the feed of runID, starting it if nobody follows the run yet; the returned
// func leaves it, and the last to leave stops it. A new feed subscribes to the run's
// notices, then reads the run: no change is missed.
func (b *broker) follow(runID string) (*feed, func()) {
	f, start, leave := b.join(runID)
	start(false)
	return f, leave
}

// expect joins the feed of a run this process is about to admit and go on running, before
// the admission write, so that a notice another process sends once the run is written
// (a cancel, a take-over) reaches the feed. The admission write pushes the run's first
// state (broker.saved); start, called after it, starts the feed's reader from that state
// (reading nothing unless a notice calls for it). leave is follow's.
func (b *broker) expect(runID string) (start, leave func()) {
	_, begin, leave := b.join(runID)
	return func() { begin(true) }, leave
}

// join joins the feed of runID, making it (subscribed, not yet reading) if nobody follows
// the run yet; start starts the reader of a feed made here (seeded: from a pushed state)
// and does nothing for one joined.
func (b *broker) join(runID string) (f *feed, start func(seeded bool), leave func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f = b.feeds[runID]
	start = func(bool) {}
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		sub := b.bus.Subscribe(events.Run(runID)) // before any read: no change is missed
		f = &feed{changed: make(chan struct{}), sub: sub, stop: func() { cancel(); sub.Close() }}
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
// once per notice of the run that no push explains, until the run is finished (it changes
// no more) or nobody follows it. A notice that follows a push is taken for that save's own:
// this process's worker handed its state over already (saved), unless the push found
// another process's notice pending (feed.push). A notice from another process that
// arrives between a push and its own notice is taken for that push's; events.ResyncInterval
// bounds what that can delay.
func (b *broker) read(ctx context.Context, id string, f *feed, seeded bool) {
	var n uint64 // a seeded feed's first notice is its seed's own, unless push saw another
	final := false
	for {
		if !seeded {
			seen, _ := f.pushed()
			r, err := b.load(ctx, id)
			if ctx.Err() != nil {
				return
			}
			f.setRead(r, err, seen)
			n, final = f.listen()
		}
		seeded = false
		if !b.awaitForeign(ctx, f, n, final) {
			return
		}
	}
}

// awaitForeign waits, from n pushes on, for a notice of f's run that no push explains,
// reporting false when the run is final or nobody follows it any more.
func (b *broker) awaitForeign(ctx context.Context, f *feed, n uint64, final bool) bool {
	for !final {
		select {
		case <-f.sub.C:
		case <-ctx.Done():
			return false
		}
		if now, foreign := f.noticed(); now == n || foreign {
			return true
		}
		n, final = f.listen()
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
	b.mu.Lock()
	f := b.feeds[r.ID]
	b.mu.Unlock()
	if f != nil {
		f.push(cloneRun(r))
	}
	b.bus.Publish(events.Run(r.ID))
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
// sleep over), has not settled: a worker is about to move it on. So a wait that follows an
// accepted resume (Resume answered) never answers with the wait that payload ends, nor a
// wait on an overdue run with the wait it is past (see resting).
func (e *Engine) Wait(ctx context.Context, id string, maxWait time.Duration) (*Run, error) {
	if maxWait <= 0 {
		return e.Get(ctx, id)
	}
	if r, ok := e.finished.get(id); ok {
		return r, nil // ended: nothing to follow
	}
	f, leave := e.broker.follow(id)
	defer leave()
	timer := time.NewTimer(min(maxWait, e.cfg.MaxWait))
	defer timer.Stop()
	expired := false
	for {
		r, err, changed := f.latest()
		switch {
		case err != nil:
			return nil, err
		case r != nil && expired:
			return r, nil
		case r != nil && r.Status.Settled():
			if r, ok, err := e.resting(ctx, r); err != nil || ok {
				return r, err
			}
		}
		select {
		case <-changed:
		case <-timer.C:
			expired = true
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
}

// WaitFrom is Wait for a caller that holds r, a state of the run it read or admitted: when
// r has ended or waits, not on a hook, for a time that has not come, it is the answer, with
// nothing read or followed; when it waits on a hook with no payload queued and its time has
// not come, the answer is the run read once more (see resting), still with nothing followed.
func (e *Engine) WaitFrom(ctx context.Context, r *Run, maxWait time.Duration) (*Run, error) {
	if r.Status.Settled() {
		if r, ok, err := e.resting(ctx, r); err != nil || ok {
			return r, err
		}
	}
	return e.Wait(ctx, r.ID, maxWait)
}

// resting reports whether settled state r of a run is what a wait answers, and with which
// state: an end, or a wait whose time has not come, yes, r itself; a wait that is due (see
// due), no; a wait on a hook, only when no payload is queued for it (a queued one is about
// to move the run on), and then with the run as read after the queue was found empty.
//
// That read is what makes the answer exact on every store: r may be older than a save that
// took a payload (a feed's state lags its notices), but a payload accepted before the queue
// was read is taken by then, and a save that takes a payload takes it in the same write
// (SaveOptions.ConsumePayload), so a run read afterwards shows it taken. When that read
// shows the run moved on to another hook, that hook's queue is looked at in turn; when it
// shows it pending or running, the wait goes on.
func (e *Engine) resting(ctx context.Context, r *Run) (*Run, bool, error) {
	for {
		if e.due(r) {
			return r, false, nil
		}
		token := hookOf(r)
		if token == "" {
			return r, r.Status.Settled(), nil
		}
		_, err := e.store.NextPayload(ctx, r.ID, r.Environment, token)
		if err == nil {
			return r, false, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return e.waitFailed(ctx, r, fmt.Errorf("reading the payloads queued for run %s: %w", r.ID, err))
		}
		now, err := e.Get(ctx, r.ID)
		if err != nil {
			return e.waitFailed(ctx, r, err)
		}
		if hookOf(now) == token && !e.due(now) {
			return now, true, nil
		}
		r = now // moved on, or its hook timed out since r was read
	}
}

// waitFailed is resting's answer to err, a store read that failed: when ctx ended, the
// last state seen and ctx's error, as Wait gives; else r as it stands, logged, as every
// wait answered a hook wait before it looked at the queue, so that one failed read does
// not fail a wait the feed's reads (readAttempts) would have outlasted.
func (e *Engine) waitFailed(ctx context.Context, r *Run, err error) (*Run, bool, error) {
	if ctx.Err() != nil {
		return r, false, ctx.Err()
	}
	e.log.Warn("waiting on a run: answering with its state as read", "run", r.ID, "err", err)
	return r, true, nil
}

// due reports whether r waits for a time that has come (its sleep is over, its hook or
// ask timed out, its retry's backoff has passed, or it was woken): a worker is about to
// move it on, so it has not settled either.
func (e *Engine) due(r *Run) bool {
	return r.Status == StatusWaiting && !r.WakeAt.IsZero() && !r.WakeAt.After(e.now())
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
