package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gorunner/gorunner/events"
)

var _ events.Lone = (*Events)(nil)

// EventsPollInterval is how often a subscribed process reads the change log: one small
// indexed query per interval for the whole process, however many waiters it has. It bounds
// how late a process hears another's change (list_changed, a run finished elsewhere).
const EventsPollInterval = 20 * time.Millisecond

// eventsKept is how many change-log rows are kept; a process that falls further behind
// (it was stopped, or a poll failed for long) re-reads everything (a Message with All).
const eventsKept = 10_000

// eventsPage is the most rows one poll reads.
const eventsPage = 1_000

// A subscribed process notes itself as a listener every listenerBeat; one not seen for
// listenerTTL counts as gone (it stopped or died) and its row is deleted.
const (
	listenerBeat = time.Second
	listenerTTL  = 5 * listenerBeat
)

// Events carries the events.Bus messages of the processes sharing the file: Publish
// appends the topics to a change log in one transaction, and Subscribe polls the log (and
// the catalog version, which every catalog write moves: events.Catalog) every
// EventsPollInterval. While its subscription sees no other process listening, Publish
// writes nothing: a process alone on the file pays no change-log writes.
type Events struct {
	s     *Store
	alone atomic.Bool
}

// Events returns the store's events.Transport.
func (s *Store) Events() events.Transport { return &Events{s: s} }

// Alone reports whether this process's subscription sees no other process listening, so
// that Publish writes nothing.
func (e *Events) Alone() bool { return e.alone.Load() }

// Publish appends m's topics to the change log and prunes rows beyond eventsKept.
func (e *Events) Publish(ctx context.Context, m events.Message) error {
	if len(m.Topics) == 0 || e.alone.Load() {
		return nil
	}
	topics, err := json.Marshal(m.Topics)
	if err != nil {
		return err
	}
	return e.s.write(ctx, func(tx *sql.Tx) error {
		res, err := e.s.in(tx).ExecContext(ctx, `INSERT INTO events (origin, topic) SELECT ?, value FROM json_each(?)`, m.Origin, topics)
		if err != nil {
			return fmt.Errorf("appending events: %w", err)
		}
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := e.s.in(tx).ExecContext(ctx, `DELETE FROM events WHERE seq <= ?`, last-eventsKept); err != nil {
			return fmt.Errorf("pruning events: %w", err)
		}
		return nil
	})
}

// Subscribe notes this process as a listener and delivers the messages appended from now
// on, polled every EventsPollInterval, until ctx ends; then the channel is closed.
func (e *Events) Subscribe(ctx context.Context) (<-chan events.Message, error) {
	id := listenerID()
	if err := e.beat(ctx, id); err != nil {
		return nil, err
	}
	cur, err := e.position(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan events.Message, 16)
	go func() {
		defer close(out)
		defer e.leave(id)
		e.follow(ctx, id, cur, out)
	}()
	return out, nil
}

// follow polls the change log from cur into out, and notes the listener every
// listenerBeat, until ctx ends. A failed poll is tried again at the next tick.
func (e *Events) follow(ctx context.Context, id string, cur cursor, out chan<- events.Message) {
	tick := time.NewTicker(EventsPollInterval)
	defer tick.Stop()
	lastBeat := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(lastBeat) >= listenerBeat && e.beat(ctx, id) == nil {
			lastBeat = time.Now()
		}
		ms, next, err := e.poll(ctx, id, cur)
		if err != nil {
			continue
		}
		cur = next
		for _, m := range ms {
			select {
			case out <- m:
			case <-ctx.Done():
				return
			}
		}
	}
}

func listenerID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// beat notes listener id as seen now and deletes the listeners gone for listenerTTL.
func (e *Events) beat(ctx context.Context, id string) error {
	now := time.Now().UnixNano()
	return e.s.write(ctx, func(tx *sql.Tx) error {
		if _, err := e.s.in(tx).ExecContext(ctx, `INSERT INTO event_listeners (id, seen_at) VALUES (?, ?)
			ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, id, now); err != nil {
			return fmt.Errorf("noting an event listener: %w", err)
		}
		_, err := e.s.in(tx).ExecContext(ctx, `DELETE FROM event_listeners WHERE seen_at < ?`, now-int64(listenerTTL))
		return err
	})
}

// leave deletes listener id when its subscription ends, and publishes again from then on.
func (e *Events) leave(id string) {
	e.alone.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), listenerBeat)
	defer cancel()
	_ = e.s.write(ctx, func(tx *sql.Tx) error {
		_, err := e.s.in(tx).ExecContext(ctx, `DELETE FROM event_listeners WHERE id = ?`, id)
		return err
	})
}

// cursor is how far a subscriber has read: the last seq and the catalog version seen.
type cursor struct {
	seq     int64
	catalog int64
}

func (e *Events) position(ctx context.Context) (cursor, error) {
	var c cursor
	err := e.s.q().QueryRowContext(ctx, `SELECT COALESCE((SELECT MAX(seq) FROM events), 0),
		(SELECT value FROM counters WHERE name = 'catalog_version')`).Scan(&c.seq, &c.catalog)
	if err != nil {
		return c, fmt.Errorf("reading the change log position: %w", unavailable(err))
	}
	return c, nil
}

// poll reads the rows after cur, the catalog version and how many other processes listen
// (none: Publish may skip its writes), as messages by origin.
func (e *Events) poll(ctx context.Context, id string, cur cursor) ([]events.Message, cursor, error) {
	rows, err := e.s.q().QueryContext(ctx, `SELECT 0, '', value FROM counters WHERE name = 'catalog_version'
		UNION ALL SELECT -1, '', COUNT(*) FROM event_listeners WHERE id != ? AND seen_at >= ?
		UNION ALL SELECT * FROM (SELECT seq, origin, topic FROM events WHERE seq > ? ORDER BY seq LIMIT ?)`,
		id, time.Now().Add(-listenerTTL).UnixNano(), cur.seq, eventsPage)
	if err != nil {
		return nil, cur, err
	}
	defer rows.Close()
	var ms []events.Message
	next := cur
	for rows.Next() {
		var seq int64
		var origin, topic string
		if err := rows.Scan(&seq, &origin, &topic); err != nil {
			return nil, cur, err
		}
		if seq == -1 {
			e.alone.Store(topic == "0")
			continue
		}
		ms, next = next.add(ms, seq, origin, topic)
	}
	return ms, next, rows.Err()
}

// add folds one row of a poll into ms: the catalog row (seq 0) when the version moved, a
// gap in seq (rows pruned before they were read) as All, others grouped by origin.
func (c cursor) add(ms []events.Message, seq int64, origin, topic string) ([]events.Message, cursor) {
	if seq == 0 {
		var v int64
		if _, err := fmt.Sscan(topic, &v); err == nil && v != c.catalog {
			c.catalog = v
			ms = append(ms, events.Message{Topics: []events.Topic{events.Catalog}})
		}
		return ms, c
	}
	if seq > c.seq+1 {
		ms = append(ms, events.Message{All: true})
	}
	c.seq = seq
	if n := len(ms); n > 0 && ms[n-1].Origin == origin && !ms[n-1].All {
		ms[n-1].Topics = append(ms[n-1].Topics, events.Topic(topic))
		return ms, c
	}
	return append(ms, events.Message{Origin: origin, Topics: []events.Topic{events.Topic(topic)}}), c
}
