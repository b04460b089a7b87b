// Package events is GoRunner's one signalling layer: an in-process broker of "this changed"
// notices by topic (a run, an idempotency key, the catalog, "runs may be due"), fed by this
// process's writers and, through a Transport, by every other process sharing the store
// (Redis pub/sub; for SQLite a change table polled once per interval per process).
//
// A notice carries no data: a subscriber re-reads its object when its topic fires, once
// after subscribing (to close the race between subscribing and reading) and at least every
// ResyncInterval, which bounds how long a notice lost between processes can delay it.
package events

import (
	"strconv"
	"time"
)

// Topic names what changed. Build them with Run and Key, or use Catalog, Due and Tokens.
type Topic string

// Topics that name no object.
const (
	// Catalog fires when the set of published workflows may have changed.
	Catalog Topic = "catalog"
	// Due fires when a run may have become due (admitted, resumed, woken, cancelled), so
	// that an idle worker anywhere claims it at once.
	Due Topic = "due"
	// Tokens fires when an API token was revoked, so that every process forgets the
	// tokens it holds in memory (auth.TokenCacheFor) at once.
	Tokens Topic = "tokens"
)

// Run is the topic of run id: it fires after every save of the run.
func Run(id string) Topic { return Topic("run:" + id) }

// Key is the topic of an idempotency key: it fires when the key is completed or released.
// The scope's length is part of the topic, so no scope and key pair can spell another's.
func Key(scope, key string) Topic {
	return Topic("key:" + strconv.Itoa(len(scope)) + ":" + scope + key)
}

// ResyncInterval is the longest a subscriber goes without re-reading its object: notices
// between processes are at most once (a Redis reconnect drops those sent meanwhile), so a
// waiter that heard nothing for this long re-reads anyway. It bounds the delay a lost notice
// can cause; it is not how waiters normally learn of changes.
const ResyncInterval = 5 * time.Second

// MaxPending is how many distinct topics may wait to be sent to other processes; beyond
// it, further topics are dropped (counted in Stats) and their remote waiters rely on
// ResyncInterval. It bounds memory while the transport is down.
const MaxPending = 10_000

// Message is what a Transport carries: the topics one process published, coalesced.
type Message struct {
	// Origin identifies the publishing Bus, so it ignores its own messages.
	Origin string
	// Topics are the topics that fired.
	Topics []Topic
	// All means notices may have been lost (a reconnect, a gap in a change log): every
	// subscriber of the receiving process should re-read.
	All bool
}
