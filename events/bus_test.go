package events

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const waitFor = 5 * time.Second

func fired(t *testing.T, s *Subscription) {
	t.Helper()
	select {
	case <-s.C:
	case <-time.After(waitFor):
		t.Fatalf("topic %s did not fire", s.topic)
	}
}

func silent(t *testing.T, s *Subscription) {
	t.Helper()
	select {
	case <-s.C:
		t.Fatalf("topic %s fired", s.topic)
	default:
	}
}

func TestTopicsAreDistinct(t *testing.T) {
	t.Parallel()
	require.NotEqual(t, Key("ab", "c"), Key("a", "bc"), "scope and key cannot be re-split")
	require.NotEqual(t, Run("x"), Topic("key:x"))
	require.NotEqual(t, Catalog, Due)
}

func TestPublishReachesOnlyItsTopic(t *testing.T) {
	t.Parallel()
	b := New(nil, nil)
	a1, a2, other := b.Subscribe(Run("a")), b.Subscribe(Run("a")), b.Subscribe(Run("b"))
	defer a1.Close()
	defer a2.Close()
	defer other.Close()
	b.Publish(Run("a"))
	fired(t, a1)
	fired(t, a2)
	silent(t, other)
	silent(t, a1)
}

func TestNoticesCoalesce(t *testing.T) {
	t.Parallel()
	b := New(nil, nil)
	s := b.Subscribe(Catalog)
	defer s.Close()
	for range 100 {
		b.Publish(Catalog)
	}
	fired(t, s)
	silent(t, s)
}

// TestSlowSubscriberDoesNotBlockPublishers checks that publishers go on while a subscriber
// never reads.
func TestSlowSubscriberDoesNotBlockPublishers(t *testing.T) {
	t.Parallel()
	b := New(nil, nil)
	stuck := b.Subscribe(Due)
	defer stuck.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10_000 {
			b.Publish(Due)
		}
	}()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("a subscriber that never reads blocked the publisher")
	}
}

func TestCloseForgetsTheSubscription(t *testing.T) {
	t.Parallel()
	b := New(nil, nil)
	subs := make([]*Subscription, 0, 50)
	for i := range 50 {
		subs = append(subs, b.Subscribe(Run(string(rune('a'+i%5)))))
	}
	require.Equal(t, Stats{Subscriptions: 50, Topics: 5}, b.Stats())
	for _, s := range subs {
		s.Close()
		s.Close() // twice is harmless
	}
	require.Equal(t, Stats{}, b.Stats(), "no subscription or topic outlives its waiters")
	b.Publish(Run("a"))
	silent(t, subs[0])
}

// hub is an in-memory Transport shared by several buses, like a Redis server.
type hub struct {
	mu     sync.Mutex
	subs   map[chan Message]struct{}
	failed error // Publish fails with it when set
}

func newHub() *hub { return &hub{subs: map[chan Message]struct{}{}} }

func (h *hub) Publish(_ context.Context, m Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed != nil {
		return h.failed
	}
	for c := range h.subs {
		select {
		case c <- m:
		default:
		}
	}
	return nil
}

func (h *hub) Subscribe(ctx context.Context) (<-chan Message, error) {
	c := make(chan Message, 64)
	h.mu.Lock()
	h.subs[c] = struct{}{}
	h.mu.Unlock()
	go func() {
		<-ctx.Done()
		h.drop(c)
	}()
	return c, nil
}

// drop closes c as a broken connection would.
func (h *hub) drop(c chan Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[c]; ok {
		delete(h.subs, c)
		close(c)
	}
}

// breakAll closes every subscription, as a server restart would.
func (h *hub) breakAll() {
	h.mu.Lock()
	subs := make([]chan Message, 0, len(h.subs))
	for c := range h.subs {
		subs = append(subs, c)
	}
	h.mu.Unlock()
	for _, c := range subs {
		h.drop(c)
	}
}

func startBus(t *testing.T, tr Transport) *Bus {
	t.Helper()
	b := New(tr, nil)
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, b.Stop(context.Background())) })
	return b
}

func TestPublishReachesOtherProcesses(t *testing.T) {
	t.Parallel()
	h := newHub()
	a, b := startBus(t, h), startBus(t, h)
	onA, onB := a.Subscribe(Key("s", "k")), b.Subscribe(Key("s", "k"))
	defer onA.Close()
	defer onB.Close()
	a.Publish(Key("s", "k"))
	fired(t, onA)
	fired(t, onB)
	silent(t, onA) // its own message coming back from the hub is ignored
}

// TestBrokenSubscriptionWakesEveryone checks that after the transport's subscription
// breaks, the bus subscribes again and tells every subscriber to re-read, since notices may
// have been lost meanwhile; and that notices flow again afterwards.
func TestBrokenSubscriptionWakesEveryone(t *testing.T) {
	t.Parallel()
	h := newHub()
	a, b := startBus(t, h), startBus(t, h)
	s := b.Subscribe(Run("r"))
	defer s.Close()
	h.breakAll()
	fired(t, s)
	require.Eventually(t, func() bool {
		a.Publish(Run("r"))
		select {
		case <-s.C:
			return true
		default:
			return false
		}
	}, waitFor, 10*time.Millisecond)
}

// TestLostNoticesAreBounded checks that a subscriber whose notices are all lost between
// processes is still told to re-read, every resync interval.
func TestLostNoticesAreBounded(t *testing.T) {
	t.Parallel()
	h := newHub()
	h.failed = errors.New("every message lost")
	a := New(h, nil)
	b := New(h, nil)
	b.resync = 10 * time.Millisecond
	for _, bus := range []*Bus{a, b} {
		require.NoError(t, bus.Start(context.Background()))
		t.Cleanup(func() { require.NoError(t, bus.Stop(context.Background())) })
	}
	s := b.Subscribe(Run("r"))
	defer s.Close()
	a.Publish(Run("r"))
	fired(t, s)
	fired(t, s) // and again: it is a period, not a one-off
}

func TestFailedPublishIsNotFatal(t *testing.T) {
	t.Parallel()
	h := newHub()
	h.failed = errors.New("down")
	a := startBus(t, h)
	s := a.Subscribe(Catalog)
	defer s.Close()
	a.Publish(Catalog)
	fired(t, s) // local subscribers hear it whatever the transport does
}

func TestPendingIsBounded(t *testing.T) {
	t.Parallel()
	b := New(newHub(), nil)
	b.loops = &loops{} // started, but nothing sends
	for i := range MaxPending + 5 {
		b.Publish(Run(string(rune(i))))
	}
	require.Equal(t, 5, b.Stats().Dropped)
	require.Len(t, b.takePending(), MaxPending)
}

// TestStopLeavesNoGoroutines counts goroutines before a bus starts and after it stops.
func TestStopLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHub()
	b := New(h, nil)
	require.NoError(t, b.Start(context.Background()))
	s := b.Subscribe(Due)
	b.Publish(Due)
	fired(t, s)
	require.Error(t, b.Start(context.Background()), "a bus starts once")
	s.Close()
	require.NoError(t, b.Stop(context.Background()))
	requireGoroutinesBack(t, before)
}

// requireGoroutinesBack waits until no more goroutines run than before; the condition
// runs in a goroutine of require.Eventually's own, hence the one more.
func requireGoroutinesBack(t *testing.T, before int) {
	t.Helper()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, waitFor, 10*time.Millisecond)
}

// lingering is a Transport whose subscription, like a poll of a store under way, ends a
// while after its context: only once release is closed.
type lingering struct{ release chan struct{} }

func (l lingering) Publish(context.Context, Message) error { return nil }

func (l lingering) Subscribe(ctx context.Context) (<-chan Message, error) {
	c := make(chan Message)
	go func() {
		defer close(c)
		<-ctx.Done()
		<-l.release
	}()
	return c, nil
}

// TestStopWaitsForTheSubscription: Stop returns only once the transport's subscription has
// ended, so that nothing of it (the SQLite change log's poll) runs on after Stop, against a
// store its owner closes next. While it lingers, Stop waits until its own context ends.
func TestStopWaitsForTheSubscription(t *testing.T) {
	l := lingering{release: make(chan struct{})}
	b := New(l, nil)
	require.NoError(t, b.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, b.Stop(ctx), context.DeadlineExceeded, "Stop returned while the subscription still ran")
	close(l.release)
}

// loneHub is a hub that can tell when nobody else listens, as the SQLite change log does.
type loneHub struct {
	*hub
	alone atomic.Bool
}

func (h *loneHub) Alone() bool { return h.alone.Load() }

// TestAloneQueuesNothing: while the transport says no other process listens, a notice
// reaches this process's subscribers and is not queued for the others; once another
// listens, notices go out again.
func TestAloneQueuesNothing(t *testing.T) {
	t.Parallel()
	h := &loneHub{hub: newHub()}
	h.alone.Store(true)
	a := startBus(t, h)
	heard, err := h.Subscribe(t.Context())
	require.NoError(t, err)
	s := a.Subscribe(Run("alone"))
	defer s.Close()
	a.Publish(Run("alone"))
	fired(t, s)

	h.alone.Store(false)
	a.Publish(Run("heard"))
	select {
	case m := <-heard:
		require.Equal(t, []Topic{Run("heard")}, m.Topics, "the notice published alone never went out")
	case <-time.After(waitFor):
		t.Fatal("a notice published once another process listens did not go out")
	}
}
