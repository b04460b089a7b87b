package events

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"
)

// Config tunes a Bus; nil means the defaults.
type Config struct {
	// Logger receives transport failures (default slog.Default()).
	Logger *slog.Logger
}

// Bus delivers notices to the subscribers of a topic in this process and, once started
// with a Transport, to those of every process sharing the store. Publishing never blocks:
// a subscriber's channel holds one pending notice, and notices coalesce while it is full.
type Bus struct {
	origin    string
	transport Transport
	lone      Lone // transport, when it can tell that no other process listens
	log       *slog.Logger
	resync    time.Duration // ResyncInterval; tests shorten it

	mu      sync.Mutex
	subs    map[Topic]map[*Subscription]struct{}
	pending map[Topic]struct{} // topics to send to other processes
	dropped int                // topics not sent because MaxPending were pending
	kick    chan struct{}      // pending became non-empty; coalesced
	loops   *loops             // set while started
}

// New returns a Bus over transport; a nil transport means this process only.
func New(transport Transport, cfg *Config) *Bus {
	log := slog.Default()
	if cfg != nil && cfg.Logger != nil {
		log = cfg.Logger
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	lone, _ := transport.(Lone)
	return &Bus{lone: lone,
		origin: hex.EncodeToString(b), transport: transport, log: log, resync: ResyncInterval,
		subs: map[Topic]map[*Subscription]struct{}{}, pending: map[Topic]struct{}{},
		kick: make(chan struct{}, 1),
	}
}

// Subscription receives the notices of one topic on C until Close.
type Subscription struct {
	// C receives a value when the topic fired since the last receive (several notices
	// may arrive as one), and when the subscriber should re-read anyway (see
	// ResyncInterval).
	C     <-chan struct{}
	c     chan struct{}
	bus   *Bus
	topic Topic
	once  sync.Once
}

// Subscribe starts receiving the notices of topic. Read the object after subscribing, not
// before, so that no change falls between the read and the subscription.
func (b *Bus) Subscribe(topic Topic) *Subscription {
	c := make(chan struct{}, 1)
	s := &Subscription{C: c, c: c, bus: b, topic: topic}
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.subs[topic]
	if set == nil {
		set = map[*Subscription]struct{}{}
		b.subs[topic] = set
	}
	set[s] = struct{}{}
	return s
}

// Close ends the subscription; it may be called more than once.
func (s *Subscription) Close() {
	s.once.Do(func() {
		b := s.bus
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs[s.topic], s)
		if len(b.subs[s.topic]) == 0 {
			delete(b.subs, s.topic)
		}
	})
}

func (s *Subscription) notify() {
	select {
	case s.c <- struct{}{}:
	default: // a notice is already pending; they coalesce
	}
}

// Publish fires topic for its subscribers here and, when the bus is started with a
// transport, in every other process. It never blocks on subscribers or the transport.
func (b *Bus) Publish(topic Topic) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fireLocked(topic)
	if b.loops == nil || b.lone != nil && b.lone.Alone() {
		return
	}
	if _, ok := b.pending[topic]; !ok && len(b.pending) >= MaxPending {
		b.dropped++
		return
	}
	b.pending[topic] = struct{}{}
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *Bus) fireLocked(topic Topic) {
	for s := range b.subs[topic] {
		s.notify()
	}
}

// deliver fires the topics of a message from another process here.
func (b *Bus) deliver(m Message) {
	if m.Origin == b.origin {
		return
	}
	if m.All {
		b.fireAll()
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range m.Topics {
		b.fireLocked(t)
	}
}

// fireAll tells every subscriber to re-read.
func (b *Bus) fireAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, set := range b.subs {
		for s := range set {
			s.notify()
		}
	}
}

// takePending returns the topics to send and empties the set.
func (b *Bus) takePending() []Topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Topic, 0, len(b.pending))
	for t := range b.pending {
		out = append(out, t)
	}
	clear(b.pending)
	return out
}

// Stats are the bus's counters, for tests and metrics.
type Stats struct {
	// Subscriptions is how many subscriptions are open.
	Subscriptions int
	// Topics is how many distinct topics have subscribers.
	Topics int
	// Dropped is how many topics were not sent to other processes (MaxPending).
	Dropped int
}

// Stats returns the bus's counters.
func (b *Bus) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Stats{Topics: len(b.subs), Dropped: b.dropped}
	for _, set := range b.subs {
		st.Subscriptions += len(set)
	}
	return st
}
