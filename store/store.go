// Package store holds what every backend (store/sqlitestore, store/redisstore,
// store/pgstore) shares with the services above it: Backend, the one type of a store
// GoRunner runs on, the error of a store that cannot be reached, and the one rule by which
// the faces answer a failure as an outage rather than a bug.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrUnreachable marks an error of a store call that could not reach the store's server (a
// dial refused, a connection cut, a reply that never came) or that the server refused
// until it can serve: nothing was half done (a change is one transaction), though a change
// whose reply never came may have been made, and the call may be retried. A backend wraps
// its driver's connection errors with it at its own boundary, so that a network error from
// anything else (a client's broken connection, an HTTP step's call) is never taken for it.
var ErrUnreachable = errors.New("store unreachable")

// checkTimeout bounds the check of the store that tells an outage from a bug (Unavailable).
const checkTimeout = 500 * time.Millisecond

// Unavailable reports whether err, a failure its caller has no answer for, is to be
// answered as the store's outage (REST: 503 UNAVAILABLE with Retry-After; MCP: the same
// problem, to retry) rather than as a bug: err is marked ErrUnreachable, whatever a check
// of the store says after it (the store may be back by then, as when it restarts), or
// ready, the store's readiness check (nil: none), fails within 500 ms, since while the
// store cannot serve, an error that reached no mark (a driver's, a timeout's) is most
// likely its doing. Any other network error (the client's own connection, an HTTP step's
// call) is not the store's, nor is the failure of a request its client cancelled: the
// client is gone, so the store is not checked for it (a client must not make the server
// ping its store by dropping requests).
func Unavailable(ctx context.Context, err error, ready func(context.Context) error) bool {
	if errors.Is(err, ErrUnreachable) {
		return true
	}
	if ready == nil || errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	return ready(ctx) != nil
}
