package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/idempotency/idemtest"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/pgstore/pgtest"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
)

// admissionBackends opens a fresh store of each backend that keeps runs and keys together.
var admissionBackends = []struct {
	name string
	open func(t *testing.T) store.Backend
}{
	{"sqlite", func(t *testing.T) store.Backend { return openStore(t) }},
	{"redis", func(t *testing.T) store.Backend { st, _, _ := redistest.Open(t); return st }},
	{"postgres", func(t *testing.T) store.Backend { st, _ := pgtest.Open(t); return st }},
}

// TestAdmitColdCache: a Service that holds nothing of a key another Service (another
// process) admitted on the same store answers it as that one would. In a scope whose
// answers are held it reads no key before its write, which finds the key: a replay, a
// mismatch or an answer not kept, with no run written. When Prepare fails (the workflow
// unpublished since, the input invalid under a new version) it reads the key, and a kept
// answer still replays; an abandoned claim is taken over.
func TestAdmitColdCache(t *testing.T) {
	t.Parallel()
	unpublished := errors.New("workflow is not published")
	other := runRequest("p:alice", "k")
	other.Body = []byte(`{"orderId":"2002"}`)
	tests := []struct {
		name       string
		maxBody    int                 // the first Service's MaxBody (0: default)
		req        idempotency.Request // the cold Service's request
		prepareErr error               // the cold Service's Prepare fails with it
		replayed   bool
		err        error
		reads      int64 // keys the cold Service reads from the store
	}{
		{name: "replay", req: runRequest("p:alice", "k"), replayed: true},
		{name: "replay, Prepare fails", req: runRequest("p:alice", "k"), prepareErr: unpublished, replayed: true, reads: 1},
		{name: "mismatch", req: other, err: idempotency.ErrKeyMismatch},
		{name: "mismatch, Prepare fails", req: other, prepareErr: unpublished, err: idempotency.ErrKeyMismatch, reads: 1},
		{name: "answer not kept", maxBody: 8, req: runRequest("p:alice", "k"), err: idempotency.ErrAnswerNotKept},
		{name: "answer not kept, Prepare fails", maxBody: 8, req: runRequest("p:alice", "k"), prepareErr: unpublished,
			err: idempotency.ErrAnswerNotKept, reads: 1},
	}
	for _, b := range admissionBackends {
		for _, tt := range tests {
			t.Run(b.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				st := b.open(t)
				first := newHarness(t, st, func(c *idempotency.Config) { c.MaxBody = tt.maxBody })
				kept, err := first.svc.Admit(ctx, runRequest("p:alice", "k"), (&admitter{st: st}).admission())
				require.NoError(t, err)

				counted := &idemtest.CountingStore{Store: st}
				cold := newHarness(t, counted, nil)
				a := &admitter{st: st, prepareErr: tt.prepareErr}
				resp, err := cold.svc.Admit(ctx, tt.req, a.admission())
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
				} else {
					require.NoError(t, err)
					require.Equal(t, tt.replayed, resp.Replayed)
					require.Equal(t, kept.RunID, resp.RunID)
					require.Equal(t, kept.Body, resp.Body)
				}
				require.Equal(t, tt.reads, counted.Calls.Load(), "keys read before the write")
				require.Zero(t, a.fallbacks.Load())
				runs, _, err := st.ListRuns(ctx, runner.ListRunsParams{})
				require.NoError(t, err)
				require.Len(t, runs, 1, "only the first admission wrote a run")
			})
		}
	}
}

// TestAdmitColdCacheAbandoned: a claim whose process died is taken over by an admission
// of a Service that never saw it, and, when Prepare fails, the request gets its error and
// the key stays free.
func TestAdmitColdCacheAbandoned(t *testing.T) {
	t.Parallel()
	bad := errors.New("invalid input")
	for _, b := range admissionBackends {
		for _, tc := range []struct {
			name       string
			prepareErr error
		}{{"prepared", nil}, {"Prepare fails", bad}} {
			prepareErr := tc.prepareErr
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				st := b.open(t)
				res, err := st.Claim(ctx, idempotency.ClaimParams{Scope: "p:alice", Key: "k", Fingerprint: "died",
					Now: epoch.Add(-time.Hour), LockTTL: time.Minute})
				require.NoError(t, err)
				require.Equal(t, idempotency.Claimed, res.Outcome)

				h := newHarness(t, st, nil)
				a := &admitter{st: st, prepareErr: prepareErr}
				resp, err := h.svc.Admit(ctx, runRequest("p:alice", "k"), a.admission())
				if prepareErr != nil {
					require.ErrorIs(t, err, bad)
					return
				}
				require.NoError(t, err)
				require.False(t, resp.Replayed)
				rec, err := h.svc.Key(ctx, "p:alice", "k")
				require.NoError(t, err)
				require.Equal(t, idempotency.StateDone, rec.State)
				require.Equal(t, resp.RunID, rec.RunID)
			})
		}
	}
}
