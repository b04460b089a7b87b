package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/events"
)

var _ events.Transport = (*Events)(nil)

// maxNotice bounds the payload of one notification: PostgreSQL refuses one of 8,000 bytes
// or more, so a message whose topics do not fit is sent as several.
const maxNotice = 7_900

// Notices that are no wire message: a catalog write's (bumpCatalog), and one that tells
// every listener to re-read everything (a topic that alone does not fit in maxNotice).
const (
	catalogNotice = "c"
	allNotice     = "a"
)

// Reconnect backoff of a listening connection that broke.
const (
	relistenMin = 100 * time.Millisecond
	relistenMax = 5 * time.Second
)

// Events carries the events.Bus messages of the processes sharing the store over
// LISTEN/NOTIFY on one channel per schema. A notification is sent on commit of the
// transaction that sends it (a catalog write's own, or Publish's), and a listener hears
// those sent while it listens: a listening connection that breaks is made again, and
// what was sent meanwhile is reported as a message with All set.
type Events struct {
	s *Store
}

// Events returns the store's events.Transport.
func (s *Store) Events() events.Transport { return &Events{s: s} }

// channel is the store's notification channel.
func (s *Store) channel() string { return "gorunner." + s.schema }

// wireMessage is a Message as notified.
type wireMessage struct {
	Origin string         `json:"o"`
	Topics []events.Topic `json:"t"`
}

// Publish sends m to every subscribed process, in one statement: as notices of at most
// maxNotice bytes each.
func (e *Events) Publish(ctx context.Context, m events.Message) error {
	notices, err := encodeNotices(m)
	if err != nil || len(notices) == 0 {
		return err
	}
	_, err = e.s.pool.Exec(ctx, publishSQL, e.s.channel(), notices)
	if err != nil {
		return fmt.Errorf("publishing events: %w", unreachable(ctx, err))
	}
	return nil
}

// publishSQL notifies each of $2 on channel $1. A transaction that notifies writes a commit
// record, which would wait for its flush to disk like any change; notices are no change
// (one lost is resynchronised by the bus), so its commit does not wait (synchronous_commit
// off for this transaction only), and a busy process's notices cost no fsync each.
const publishSQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, n) FROM unnest($2::text[]) AS n`

// encodeNotices splits m's topics into notices of at most maxNotice bytes; a topic that
// alone does not fit makes an allNotice instead.
func encodeNotices(m events.Message) ([]string, error) {
	var notices []string
	var topics []events.Topic
	size := 0
	flush := func() error {
		if len(topics) == 0 {
			return nil
		}
		b, err := json.Marshal(wireMessage{Origin: m.Origin, Topics: topics})
		notices, topics, size = append(notices, string(b)), nil, 0
		return err
	}
	overhead := len(m.Origin) + 20
	for _, t := range m.Topics {
		n := len(t) + 8 // quotes, a comma, and room for escapes of a plain topic
		if overhead+n > maxNotice {
			notices = append(notices, allNotice)
			continue
		}
		if overhead+size+n > maxNotice {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		topics, size = append(topics, t), size+n
	}
	return notices, flush()
}

// Subscribe opens this subscription's listening connection (a process's bus subscribes
// once: one connection per process) and delivers each notice until ctx ends; then the
// channel is closed.
func (e *Events) Subscribe(ctx context.Context) (<-chan events.Message, error) {
	conn, err := e.listen(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan events.Message, 64)
	go e.follow(ctx, conn, out)
	return out, nil
}

// listen opens a connection of its own, outside the pool, and listens on the channel.
func (e *Events) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, e.s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("listening for events: %w", unreachable(ctx, err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{e.s.channel()}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("listening for events: %w", unreachable(ctx, err))
	}
	return conn, nil
}

// follow delivers conn's notices into out until ctx ends. A broken connection is made
// again (with backoff) and an All message delivered, as notices may have been missed.
func (e *Events) follow(ctx context.Context, conn *pgx.Conn, out chan<- events.Message) {
	defer close(out)
	defer func() { _ = conn.Close(context.Background()) }()
	for {
		n, err := conn.WaitForNotification(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			_ = conn.Close(context.Background())
			if conn = e.relisten(ctx); conn == nil {
				return
			}
			if !send(ctx, out, events.Message{All: true}) {
				return
			}
			continue
		}
		if m, ok := decodeNotice(n.Payload); ok && !send(ctx, out, m) {
			return
		}
	}
}

// relisten makes the listening connection again, waiting longer after each failure; nil
// once ctx ends.
func (e *Events) relisten(ctx context.Context) *pgx.Conn {
	wait := relistenMin
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if conn, err := e.listen(ctx); err == nil {
			return conn
		}
		wait = min(2*wait, relistenMax)
	}
}

// send delivers m into out, false once ctx ends.
func send(ctx context.Context, out chan<- events.Message, m events.Message) bool {
	select {
	case out <- m:
		return true
	case <-ctx.Done():
		return false
	}
}

// decodeNotice turns a notification's payload into a Message; false skips it.
func decodeNotice(payload string) (events.Message, bool) {
	switch payload {
	case catalogNotice:
		return events.Message{Topics: []events.Topic{events.Catalog}}, true
	case allNotice:
		return events.Message{All: true}, true
	}
	var w wireMessage
	if err := json.Unmarshal([]byte(payload), &w); err != nil {
		return events.Message{}, false
	}
	return events.Message{Origin: w.Origin, Topics: w.Topics}, true
}
