package events

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Transport carries messages between the processes sharing a store. Delivery is at most
// once and may reorder; the Bus makes up for lost messages with ResyncInterval.
type Transport interface {
	// Publish sends m to every subscribed process, this one included.
	Publish(ctx context.Context, m Message) error
	// Subscribe delivers the messages published from now on until ctx ends or the
	// subscription breaks; then the channel is closed. A transport that knows it missed
	// messages (a reconnect) delivers a Message with All set.
	Subscribe(ctx context.Context) (<-chan Message, error)
}

// Lone is a Transport that can tell when no other process listens, so that its Publish
// would send nothing: the bus then queues no notice for it, which spares waking its sending
// goroutine on every Publish. A notice published while Alone is lost to processes that
// start listening afterwards, as it would be in Publish.
type Lone interface {
	Transport
	Alone() bool
}

// Resubscribe backoff after a transport's subscription broke.
const (
	resubscribeMin = 100 * time.Millisecond
	resubscribeMax = 5 * time.Second
)

// loops are the goroutines a started bus runs.
type loops struct {
	stop context.CancelFunc
	done chan struct{}
}

// Start subscribes to the transport and starts sending this process's notices and
// receiving the others', until Stop. Without a transport it does nothing.
func (b *Bus) Start(ctx context.Context) error {
	if b.transport == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.loops != nil {
		return errors.New("events: bus already started")
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	in, err := b.transport.Subscribe(loopCtx)
	if err != nil {
		stop()
		return fmt.Errorf("subscribing to events: %w", err)
	}
	l := &loops{stop: stop, done: make(chan struct{})}
	b.loops = l
	go func() {
		defer close(l.done)
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.send(loopCtx)
		}()
		// The transport's subscription ends on its own once loopCtx has: wait for it (its
		// channel closed), so that nothing of it (a poll of the store, say) outlives Stop.
		if in := b.receive(loopCtx, in); in != nil {
			for range in {
			}
		}
		<-done
	}()
	return nil
}

// Stop ends what Start began and waits for it, or for ctx. Notices not yet sent are lost.
func (b *Bus) Stop(ctx context.Context) error {
	b.mu.Lock()
	l := b.loops
	b.loops = nil
	clear(b.pending)
	b.mu.Unlock()
	if l == nil {
		return nil
	}
	l.stop()
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send publishes the pending topics, all of them in one message, whenever there are some:
// topics published while a message is on its way go out together in the next.
func (b *Bus) send(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
		}
		topics := b.takePending()
		if len(topics) == 0 {
			continue
		}
		err := b.transport.Publish(ctx, Message{Origin: b.origin, Topics: topics})
		if err != nil && ctx.Err() == nil {
			b.log.Warn("events: publishing to other processes failed; their waiters re-read within the resync interval",
				"topics", len(topics), "err", err)
		}
	}
}

// receive delivers the messages of other processes, resubscribes when the subscription
// breaks (then tells every subscriber to re-read: messages may have been lost), and tells
// every subscriber to re-read each ResyncInterval, until ctx ends. It returns the
// subscription it read last (nil if none), which its transport closes once it has stopped.
func (b *Bus) receive(ctx context.Context, in <-chan Message) <-chan Message {
	resync := time.NewTicker(b.resync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return in
		case <-resync.C:
			b.fireAll()
		case m, ok := <-in:
			if ok {
				b.deliver(m)
				continue
			}
			if in = b.resubscribe(ctx); in == nil {
				return nil
			}
			b.fireAll()
		}
	}
}

// resubscribe subscribes again, backing off between failures, until it succeeds (nil
// only when ctx ended).
func (b *Bus) resubscribe(ctx context.Context) <-chan Message {
	wait := resubscribeMin
	for {
		in, err := b.transport.Subscribe(ctx)
		if err == nil {
			return in
		}
		if ctx.Err() != nil {
			return nil
		}
		b.log.Warn("events: resubscribing failed; retrying", "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, resubscribeMax)
	}
}
