// Package store holds what every backend (store/sqlitestore, store/redisstore) shares with
// the services above it beyond their contracts: the error of a store that cannot be
// reached, which the faces answer as an outage rather than a bug.
package store

import "errors"

// ErrUnreachable marks an error of a store call that could not reach the store's server (a
// dial refused, a connection cut, a reply that never came) or that the server refused
// until it can serve: nothing was half done (a change is one transaction), though a change
// whose reply never came may have been made, and the call may be retried. A backend wraps
// its driver's connection errors with it at its own boundary, so that a network error from
// anything else (a client's broken connection, an HTTP step's call) is never taken for it.
var ErrUnreachable = errors.New("store unreachable")
