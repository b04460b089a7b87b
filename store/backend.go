package store

import (
	"context"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/runner"
)

// Backend is a store GoRunner runs on: every contract the services above it declare (the
// catalog's, auth's, keyed replay's, the engine's with its admissions, OAuth's), the
// events of the processes sharing it, a health check and Close. store/sqlitestore,
// store/redisstore and store/pgstore implement it, and store/storetest.Run is its
// conformance suite.
type Backend interface {
	catalog.Store
	auth.Store
	idempotency.Store
	runner.Store
	oauth.Store
	// Events is the transport of the events.Bus messages between the processes sharing
	// the store.
	Events() events.Transport
	// Ping reports whether the store can serve now (the readiness check).
	Ping(ctx context.Context) error
	// Close releases the store's connections.
	Close() error
}
