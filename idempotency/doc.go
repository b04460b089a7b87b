// Package idempotency implements keyed replay (SPEC §4): a request carrying an
// Idempotency-Key is done once, and a retry with the same key and the same request gets the
// kept answer back instead of doing the work again.
//
// Service.Do is the one path every surface takes — the HTTP Middleware for REST and
// webhooks, the MCP tool handler directly — so that a REST retry and an MCP call with the
// same key and request replay each other. Keys live in a Store (store/sqlitestore,
// store/redisstore); a request is identified by its Fingerprint.
package idempotency
