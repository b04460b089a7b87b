//go:build !race

package idempotency_test

// raceEnabled: the race detector slows the pure-Go SQLite some 40 times.
const raceEnabled = false
