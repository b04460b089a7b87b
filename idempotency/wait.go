package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// KeyRef names one key of one scope.
type KeyRef struct {
	Scope string
	Key   string
}

// Notifier carries "this key finished" between processes that share a store, so that a
// retry waiting on one process wakes when the first request finishes on another (Redis
// pub/sub implements it). Delivery may be lossy: a waiter re-reads the store before it
// gives up, so a lost signal costs a 409 at worst, never a wrong answer.
type Notifier interface {
	// Publish announces that a key was completed or released.
	Publish(ctx context.Context, scope, key string) error
	// Subscribe delivers every key published from now on (by any process, this one
	// included) until ctx ends or the subscription breaks; then the channel is closed.
	Subscribe(ctx context.Context) (<-chan KeyRef, error)
}

// Start subscribes to Config.Notifier, so that waiting retries wake when another process
// finishes their key; until then, and without a Notifier, they poll the store. Stop ends it.
func (s *Service) Start(ctx context.Context) error {
	if s.cfg.Notifier == nil {
		return nil
	}
	s.sub.mu.Lock()
	defer s.sub.mu.Unlock()
	if s.sub.cancel != nil {
		return errors.New("idempotency: already started")
	}
	subCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	signals, err := s.cfg.Notifier.Subscribe(subCtx)
	if err != nil {
		cancel()
		return fmt.Errorf("subscribing to idempotency key signals: %w", err)
	}
	s.sub.cancel, s.sub.done = cancel, make(chan struct{})
	s.sub.live.Store(true)
	go s.listen(signals, s.sub.done)
	return nil
}

// Stop ends what Start began and waits for it to end, or for ctx.
func (s *Service) Stop(ctx context.Context) error {
	s.sub.mu.Lock()
	cancel, done := s.sub.cancel, s.sub.done
	s.sub.cancel, s.sub.done = nil, nil
	s.sub.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) listen(signals <-chan KeyRef, done chan<- struct{}) {
	defer close(done)
	defer s.sub.live.Store(false)
	for ref := range signals {
		s.waits.signal(ref)
	}
}

// subscription is the Notifier feed Start opened.
type subscription struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	live   atomic.Bool // signals arrive; waiters need not poll
}

// finished wakes the waiters of req's key, here and, through the Notifier, elsewhere.
func (s *Service) finished(ctx context.Context, req Request) {
	s.waits.signal(KeyRef{Scope: req.Scope, Key: req.Key})
	if s.cfg.Notifier == nil {
		return
	}
	if err := s.cfg.Notifier.Publish(context.WithoutCancel(ctx), req.Scope, req.Key); err != nil {
		s.cfg.Logger.WarnContext(ctx, "publishing idempotency key signal failed",
			"key", req.Key, "scope", req.Scope, "err", err)
	}
}

// await waits until deadline for the in-progress request holding req's key to finish. It
// answers with the replay (or why there is none), ErrInProgress at the deadline, or freed
// when the first request failed and the key is free to claim again.
func (s *Service) await(ctx context.Context, req Request, fp string, deadline time.Time) (resp *Response, freed bool, err error) {
	ref := KeyRef{Scope: req.Scope, Key: req.Key}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var poll <-chan time.Time
	if !s.sub.live.Load() {
		ticker := time.NewTicker(s.cfg.PollInterval)
		defer ticker.Stop()
		poll = ticker.C
	}
	for expired := false; ; {
		// Subscribe before reading, so that a finish between the read and the wait wakes us.
		woken, stop := s.waits.wait(ref)
		rec, err := s.store.Get(ctx, req.Scope, req.Key, s.cfg.Now())
		switch {
		case errors.Is(err, ErrNotFound):
			stop()
			return nil, true, nil
		case err == nil && (rec.State != StateInProgress || rec.Fingerprint != fp):
			stop()
			resp, err := s.answer(rec, fp)
			return resp, false, err
		case expired: // a read error (store down) counts as still in progress
			stop()
			s.metrics.count(outcomeInProgress)
			return nil, false, ErrInProgress
		}
		select {
		case <-woken:
		case <-poll:
		case <-timer.C:
			expired = true
		case <-ctx.Done():
			stop()
			return nil, false, ctx.Err()
		}
		stop()
	}
}

// broker wakes the in-process waiters of a key when it finishes.
type broker struct {
	mu      sync.Mutex
	waiters map[KeyRef]map[chan struct{}]struct{}
}

func newBroker() *broker {
	return &broker{waiters: map[KeyRef]map[chan struct{}]struct{}{}}
}

// wait returns a channel closed at the next signal of ref, and a func to stop waiting.
func (b *broker) wait(ref KeyRef) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.waiters[ref]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		b.waiters[ref] = set
	}
	set[ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(set, ch)
		if len(set) == 0 && len(b.waiters[ref]) == 0 {
			delete(b.waiters, ref)
		}
	}
}

// signal wakes every waiter of ref.
func (b *broker) signal(ref KeyRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.waiters[ref] {
		close(ch)
	}
	delete(b.waiters, ref)
}
