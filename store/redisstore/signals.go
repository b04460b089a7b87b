package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
)

var (
	_ idempotency.Notifier = (*KeyNotifier)(nil)
	_ runner.WakeSignal    = (*WakeSignal)(nil)
)

// KeyNotifier carries "this idempotency key finished" between processes over Redis
// pub/sub. Delivery is at most once: a subscriber that is disconnected misses messages,
// which idempotency.Service tolerates by reading the store before it gives up.
type KeyNotifier struct {
	s *Store
}

// KeyNotifier returns the store's idempotency.Notifier.
func (s *Store) KeyNotifier() *KeyNotifier { return &KeyNotifier{s: s} }

// Publish announces that a key was completed or released.
func (n *KeyNotifier) Publish(ctx context.Context, scope, key string) error {
	msg, err := json.Marshal([2]string{scope, key})
	if err != nil {
		return err
	}
	return wrapErr("publishing key signal", n.s.rdb.Publish(ctx, n.s.k.keysChannel(), msg).Err())
}

// Subscribe delivers every key published from now on until ctx ends.
func (n *KeyNotifier) Subscribe(ctx context.Context) (<-chan idempotency.KeyRef, error) {
	return subscribe(ctx, n.s, n.s.k.keysChannel(), func(payload string) (idempotency.KeyRef, bool) {
		var pair [2]string
		if err := json.Unmarshal([]byte(payload), &pair); err != nil {
			return idempotency.KeyRef{}, false
		}
		return idempotency.KeyRef{Scope: pair[0], Key: pair[1]}, true
	})
}

// WakeSignal carries "a run may be due now" between processes over Redis pub/sub, so a
// run started or resumed on one process is claimed at once by an idle one. Lost messages
// cost only latency: every engine also polls the store.
type WakeSignal struct {
	s *Store
}

// WakeSignal returns the store's runner.WakeSignal.
func (s *Store) WakeSignal() *WakeSignal { return &WakeSignal{s: s} }

// Publish announces that a run was made due.
func (w *WakeSignal) Publish(ctx context.Context) error {
	return wrapErr("publishing wake signal", w.s.rdb.Publish(ctx, w.s.k.wakeChannel(), "").Err())
}

// Subscribe delivers a value per announcement until ctx ends.
func (w *WakeSignal) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	return subscribe(ctx, w.s, w.s.k.wakeChannel(), func(string) (struct{}, bool) { return struct{}{}, true })
}

// subscribe opens a subscription to channel, confirmed by the server, and delivers each
// message decoded until ctx ends; then the channel is closed. go-redis reconnects a
// broken subscription by itself, so the channel stays open across a Redis restart.
func subscribe[T any](ctx context.Context, s *Store, channel string, decode func(string) (T, bool)) (<-chan T, error) {
	ps := s.rdb.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", channel, joinClose(err, ps))
	}
	in := ps.Channel()
	out := make(chan T, 16)
	go func() {
		<-ctx.Done()
		_ = ps.Close()
	}()
	go func() {
		defer close(out)
		for msg := range in {
			v, ok := decode(msg.Payload)
			if !ok {
				continue
			}
			select {
			case out <- v:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func joinClose(err error, ps *redis.PubSub) error {
	if cerr := ps.Close(); cerr != nil {
		return fmt.Errorf("%w (closing: %v)", err, cerr)
	}
	return err
}

// CatalogSignal subscribes to catalog changes: every script that bumps the catalog
// version publishes it, so watchers on every process look at once (mcpserver.Config).
func (s *Store) CatalogSignal(ctx context.Context) (<-chan struct{}, error) {
	return subscribe(ctx, s, s.k.catalogChannel(), func(string) (struct{}, bool) { return struct{}{}, true })
}
