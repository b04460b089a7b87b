package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/events"
)

var _ events.Transport = (*Events)(nil)

// Events carries the events.Bus messages of the processes sharing the store over Redis
// pub/sub, on one channel; the catalog scripts' own channel (they publish whenever they move
// the catalog version) is heard as events.Catalog. Delivery is at most once: a reconnect
// loses what was published meanwhile, and is reported as a message with All set.
type Events struct {
	s *Store
}

// Events returns the store's events.Transport.
func (s *Store) Events() events.Transport { return &Events{s: s} }

// wireMessage is a Message as published on the events channel.
type wireMessage struct {
	Origin string         `json:"o"`
	Topics []events.Topic `json:"t"`
}

// Publish sends m to every subscribed process.
func (e *Events) Publish(ctx context.Context, m events.Message) error {
	msg, err := json.Marshal(wireMessage{Origin: m.Origin, Topics: m.Topics})
	if err != nil {
		return err
	}
	return wrapErr("publishing events", e.s.rdb.Publish(ctx, e.s.k.eventsChannel(), msg).Err())
}

// Subscribe opens a subscription, confirmed by the server, and delivers each message until
// ctx ends; then the channel is closed. go-redis reconnects a broken subscription by
// itself; each resubscription after the first is delivered as a message with All set.
func (e *Events) Subscribe(ctx context.Context) (<-chan events.Message, error) {
	channels := []string{e.s.k.eventsChannel(), e.s.k.catalogChannel()}
	ps := e.s.rdb.Subscribe(ctx, channels...)
	for range channels {
		if _, err := ps.Receive(ctx); err != nil {
			return nil, fmt.Errorf("subscribing to events: %w", joinClose(err, ps))
		}
	}
	out := make(chan events.Message, 64)
	go func() {
		<-ctx.Done()
		_ = ps.Close()
	}()
	go func() {
		defer close(out)
		for raw := range ps.ChannelWithSubscriptions() {
			m, ok := e.decode(raw)
			if !ok {
				continue
			}
			select {
			case out <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// decode turns what the subscription received into a Message; false skips it.
func (e *Events) decode(raw any) (events.Message, bool) {
	switch v := raw.(type) {
	case *redis.Subscription: // only reconnects: the first confirmations were read above
		return events.Message{All: true}, v.Kind == "subscribe"
	case *redis.Message:
		if v.Channel == e.s.k.catalogChannel() {
			return events.Message{Topics: []events.Topic{events.Catalog}}, true
		}
		var w wireMessage
		if err := json.Unmarshal([]byte(v.Payload), &w); err != nil {
			return events.Message{}, false
		}
		return events.Message{Origin: w.Origin, Topics: w.Topics}, true
	}
	return events.Message{}, false
}

func joinClose(err error, ps *redis.PubSub) error {
	if cerr := ps.Close(); cerr != nil {
		return fmt.Errorf("%w (closing: %v)", err, cerr)
	}
	return err
}
