package runner

import (
	"context"
	"sync"
	"time"
)

// broker tells in-process waiters that a run changed. Local workers publish after every
// save; runs worked by other processes are seen by the waiters' own cheap store poll.
type broker struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newBroker() *broker {
	return &broker{subs: map[string]map[chan struct{}]struct{}{}}
}

// subscribe returns a channel that receives a signal (coalesced) whenever runID changes.
func (b *broker) subscribe(runID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs[runID] == nil {
		b.subs[runID] = map[chan struct{}]struct{}{}
	}
	b.subs[runID][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs[runID], ch)
		if len(b.subs[runID]) == 0 {
			delete(b.subs, runID)
		}
	}
}

func (b *broker) publish(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[runID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Wait returns run id once it is no longer pending or running, or when maxWait (capped by
// Config.MaxWait) elapses, with its state at that moment. When ctx ends first it returns the
// last state seen and ctx's error.
func (e *Engine) Wait(ctx context.Context, id string, maxWait time.Duration) (*Run, error) {
	changed, unsubscribe := e.broker.subscribe(id)
	defer unsubscribe()
	timer := time.NewTimer(min(maxWait, e.cfg.MaxWait))
	defer timer.Stop()
	poll := time.NewTicker(e.cfg.PollInterval)
	defer poll.Stop()
	for {
		r, err := e.store.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.Status != StatusPending && r.Status != StatusRunning {
			return r, nil
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-timer.C:
			return r, nil
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
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
	changed, unsubscribe := e.broker.subscribe(id)
	defer unsubscribe()
	poll := time.NewTicker(e.cfg.PollInterval)
	defer poll.Stop()
	last := ""
	for {
		r, err := e.store.GetRun(ctx, id)
		if err != nil {
			return
		}
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
		select {
		case <-changed:
		case <-poll.C:
		case <-ctx.Done():
			return
		}
	}
}

// fingerprint sums up what watchers care about: the run's and its steps' statuses.
func fingerprint(r *Run) string {
	b := []byte(r.Status)
	for _, s := range r.Steps {
		b = append(b, '/')
		b = append(b, s.Status...)
	}
	return string(b)
}
