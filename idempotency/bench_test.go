package idempotency_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/gorunner/gorunner/idempotency"
)

// BenchmarkMiddleware measures what the middleware adds to a trivial route on SQLite.
func BenchmarkMiddleware(b *testing.B) {
	route := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"data":{"id":"r1","status":"pending"}}`))
	})
	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			call{key: "k", principal: "alice", body: `{"orderId":"1001"}`}.serve(route)
		}
	})
	b.Run("new_key", func(b *testing.B) {
		srv := newHarness(b, nil, nil).handler(route)
		i := 0
		for b.Loop() {
			// A principal per thousand keys, so that the cap is never reached.
			principal := "p" + strconv.Itoa(i/1000)
			call{key: strconv.Itoa(i), principal: principal, body: `{"orderId":"1001"}`}.serve(srv)
			i++
		}
	})
	b.Run("replay", func(b *testing.B) {
		srv := newHarness(b, nil, nil).handler(route)
		c := call{key: "k", principal: "alice", body: `{"orderId":"1001"}`}
		c.serve(srv)
		for b.Loop() {
			if w := c.serve(srv); w.Header().Get(idempotency.HeaderReplayed) != "true" {
				b.Fatalf("not a replay: %d", w.Code)
			}
		}
	})
}
