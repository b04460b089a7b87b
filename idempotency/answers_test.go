package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/idempotency/idemtest"
	"github.com/gorunner/gorunner/runner"
)

// surface is one way a keyed request reaches a Service: Do (the REST middleware) or
// Admit (a run's admission), both over the same SQLite store.
type surface struct {
	name string
	send func(h *harness, a *admitter, req idempotency.Request) (*idempotency.Response, error)
}

var surfaces = []surface{
	{"Do", func(h *harness, _ *admitter, req idempotency.Request) (*idempotency.Response, error) {
		var calls atomic.Int64
		return h.svc.Do(context.Background(), req, answer(&calls, http.StatusCreated))
	}},
	{"Admit", func(h *harness, a *admitter, req idempotency.Request) (*idempotency.Response, error) {
		return h.svc.Admit(context.Background(), req, a.admission())
	}},
}

// heldHarness is a Service over a counting wrapper of a fresh SQLite store, and an
// admitter over the same store.
func heldHarness(t *testing.T) (*harness, *idemtest.CountingStore, *admitter) {
	t.Helper()
	st := openStore(t)
	counted := &idemtest.CountingStore{Store: st}
	return newHarness(t, counted, nil), counted, &admitter{st: st}
}

// heldKey is a surface's Service once it holds alice's key k: req was sent through it and
// answered anew (first), and the store's calls count from zero.
type heldKey struct {
	h       *harness
	counted *idemtest.CountingStore
	a       *admitter
	req     idempotency.Request
	first   *idempotency.Response
}

// asked is how many times the store was asked since the counts were reset: through the
// Service's Store, or by an admission's write.
func asked(counted *idemtest.CountingStore, a *admitter) int64 {
	return counted.Calls.Load() + a.writes.Load()
}

// eachSurface runs check in parallel on every surface, each with its own heldKey.
func eachSurface(t *testing.T, check func(t *testing.T, sf surface, k heldKey)) {
	t.Helper()
	for _, sf := range surfaces {
		t.Run(sf.name, func(t *testing.T) {
			t.Parallel()
			h, counted, a := heldHarness(t)
			req := runRequest("p:alice", "k")
			first, err := sf.send(h, a, req)
			require.NoError(t, err)
			require.False(t, first.Replayed)
			counted.Calls.Store(0)
			a.writes.Store(0)
			check(t, sf, heldKey{h: h, counted: counted, a: a, req: req, first: first})
		})
	}
}

// TestReplayFromMemoryReadsNoStore: once a process has written or read a finished key, its
// replays, spelled as the first request or otherwise, ask the store nothing. Another
// process on the same store reads the key once, then holds it too.
func TestReplayFromMemoryReadsNoStore(t *testing.T) {
	t.Parallel()
	eachSurface(t, func(t *testing.T, sf surface, k heldKey) {
		h, counted, a, req, first := k.h, k.counted, k.a, k.req, k.first
		respelled := req
		respelled.Body = []byte(` { "orderId" : "1001" } `)
		for _, r := range []idempotency.Request{req, req, respelled, respelled, req} {
			again, err := sf.send(h, a, r)
			require.NoError(t, err)
			require.True(t, again.Replayed)
			require.Equal(t, first.Body, again.Body)
			require.Equal(t, first.RunID, again.RunID)
		}
		require.Zero(t, asked(counted, a), "a replay held in memory asks the store nothing")
		require.InDelta(t, 5, h.count(t, "replay"), 0)

		other := &idemtest.CountingStore{Store: counted.Store}
		twin := newHarness(t, other, nil)
		for range 3 {
			again, err := sf.send(twin, a, req)
			require.NoError(t, err)
			require.True(t, again.Replayed)
			require.Equal(t, first.Body, again.Body)
		}
		require.EqualValues(t, 1, asked(other, a), "another process reads the key once")
		runs, _, err := a.st.ListRuns(context.Background(), runner.ListRunsParams{})
		require.NoError(t, err)
		require.LessOrEqual(t, len(runs), 1, "nothing is admitted again")
	})
}

// TestHeldAnswerExpires: a key held in memory is not answered past its ExpiresAt; the
// store is asked, and the key is free for a new request.
func TestHeldAnswerExpires(t *testing.T) {
	t.Parallel()
	eachSurface(t, func(t *testing.T, sf surface, k heldKey) {
		h, counted, a, req, first := k.h, k.counted, k.a, k.req, k.first
		h.clock.Advance(24*time.Hour - time.Nanosecond)
		again, err := sf.send(h, a, req)
		require.NoError(t, err)
		require.True(t, again.Replayed, "live until its ExpiresAt")

		h.clock.Advance(time.Nanosecond)
		fresh, err := sf.send(h, a, req)
		require.NoError(t, err)
		require.False(t, fresh.Replayed, "an expired key is done again")
		require.NotZero(t, asked(counted, a), "an expired key is asked of the store")
		if sf.name == "Admit" {
			require.NotEqual(t, first.RunID, fresh.RunID)
		}
	})
}

// TestHeldAnswerMismatch: another request with a held key gets ErrKeyMismatch, as from the
// store, without asking it, and does not displace the request the key remembers.
func TestHeldAnswerMismatch(t *testing.T) {
	t.Parallel()
	eachSurface(t, func(t *testing.T, sf surface, k heldKey) {
		h, counted, a, req := k.h, k.counted, k.a, k.req
		for _, tweak := range []func(*idempotency.Request){
			func(r *idempotency.Request) { r.Body = []byte(`{"orderId":"2002"}`) },
			func(r *idempotency.Request) { r.Path = "/api/workflows/other/run" },
			func(r *idempotency.Request) { r.Query = map[string][]string{"environment": {"test"}} },
			func(r *idempotency.Request) { r.Method = http.MethodPut },
		} {
			other := req
			tweak(&other)
			_, err := sf.send(h, a, other)
			require.ErrorIs(t, err, idempotency.ErrKeyMismatch)
		}
		again, err := sf.send(h, a, req)
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Zero(t, asked(counted, a))
		require.InDelta(t, 4, h.count(t, "mismatch"), 0)
	})
}

// TestHeldAnswerStaysInItsScope: the very same request with the same key, byte for byte,
// from another principal is that principal's own key: done anew, never another's held
// answer, and the first principal's key is still replayed.
func TestHeldAnswerStaysInItsScope(t *testing.T) {
	t.Parallel()
	eachSurface(t, func(t *testing.T, sf surface, k heldKey) {
		bob := k.req
		bob.Scope = idempotency.PrincipalScope("bob")
		theirs, err := sf.send(k.h, k.a, bob)
		require.NoError(t, err)
		require.False(t, theirs.Replayed, "another principal's key is its own")
		require.NotZero(t, asked(k.counted, k.a), "it was asked of the store")
		if sf.name == "Admit" {
			require.NotEqual(t, k.first.RunID, theirs.RunID)
		}
		again, err := sf.send(k.h, k.a, bob)
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Equal(t, theirs.Body, again.Body)
		mine, err := sf.send(k.h, k.a, k.req)
		require.NoError(t, err)
		require.True(t, mine.Replayed)
		require.Equal(t, k.first.Body, mine.Body)
		require.Equal(t, k.first.RunID, mine.RunID)
	})
}

// TestEvictingScopesAreNotHeld: a webhook scope evicts its oldest key at its cap, so its
// keys are always asked of the store: a key evicted by another request is done again, not
// replayed from memory.
func TestEvictingScopesAreNotHeld(t *testing.T) {
	t.Parallel()
	webhook := idempotency.Policy{KeepFailures: true, EvictOldest: true}
	tests := []struct {
		name   string
		scope  string
		policy idempotency.Policy
	}{
		{"webhook", idempotency.WorkflowScope("wf"), webhook},
		{"workflow scope, REST policy", idempotency.WorkflowScope("wf"), idempotency.Policy{}},
		{"principal scope, evicting policy", idempotency.PrincipalScope("alice"), idempotency.Policy{EvictOldest: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			counted := &idemtest.CountingStore{Store: st}
			h := newHarness(t, counted, func(c *idempotency.Config) { c.MaxKeys = 1 })
			var calls atomic.Int64
			send := func(key string) *idempotency.Response {
				req := runRequest(tt.scope, key)
				req.Policy = tt.policy
				resp, err := h.svc.Do(context.Background(), req, answer(&calls, http.StatusCreated))
				require.NoError(t, err)
				return resp
			}
			send("k1")
			counted.Calls.Store(0)
			require.True(t, send("k1").Replayed)
			require.NotZero(t, counted.Calls.Load(), "the replay asked the store")
			if !tt.policy.EvictOldest {
				return
			}
			send("k2") // evicts k1 at the cap of 1
			again := send("k1")
			require.False(t, again.Replayed, "an evicted key is done again")
			require.EqualValues(t, 3, calls.Load())
		})
	}
}

// TestHeldAnswersConcurrent: many requests over a few keys, from both surfaces at once,
// each key done once and every other request its replay, with the same answer (run with
// -race).
func TestHeldAnswersConcurrent(t *testing.T) {
	t.Parallel()
	h, _, a := heldHarness(t)
	const keys, workers, rounds = 8, 8, 40
	answered := make([]sync.Map, keys) // answer bodies per key
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				k := (w + i) % keys
				req := runRequest("p:alice", fmt.Sprintf("k%d", k))
				resp, err := surfaces[(w+i/keys)%len(surfaces)].send(h, a, req)
				if err != nil {
					t.Error(err)
					return
				}
				answered[k].Store(string(resp.Body), true)
			}
		})
	}
	wg.Wait()
	for k := range answered {
		n := 0
		answered[k].Range(func(any, any) bool { n++; return true })
		require.Equal(t, 1, n, "key k%d answered one way", k)
	}
	require.InDelta(t, keys, h.count(t, "new"), 0)
	require.InDelta(t, workers*rounds-keys, h.count(t, "replay"), 0)
}
