package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store"
)

// admitter builds Admissions whose one write is a real run admission into a store, and
// counts what each path did.
type admitter struct {
	st                          store.Backend
	prepared, fallbacks, writes atomic.Int64
	split                       bool  // Write answers ErrSplit, as a start-token conflict does
	prepareErr                  error // Prepare fails with it
	writeErr                    error // Write fails with it, after writing when lost is set (its reply lost)
	lost                        bool
}

func (a *admitter) admission() idempotency.Admission {
	return idempotency.Admission{
		Prepare: func(context.Context) (*idempotency.Prepared, error) {
			a.prepared.Add(1)
			if a.prepareErr != nil {
				return nil, a.prepareErr
			}
			r := &runner.Run{ID: uuid.NewString(), WorkflowID: "w", Workflow: "w", Environment: runner.EnvProduction,
				Status: runner.StatusPending, Input: json.RawMessage(`{}`), Output: json.RawMessage(`null`), CreatedAt: epoch}
			answer := &idempotency.Response{Status: http.StatusAccepted, Body: []byte(`{"data":{"id":"` + r.ID + `"}}`), RunID: r.ID}
			return &idempotency.Prepared{Answer: answer, Write: func(ctx context.Context, key *idempotency.KeyWrite) (idempotency.ClaimResult, error) {
				a.writes.Add(1)
				if a.split {
					return idempotency.ClaimResult{}, idempotency.ErrSplit
				}
				if a.writeErr != nil && !a.lost {
					return idempotency.ClaimResult{}, a.writeErr
				}
				res, err := a.st.CreateRun(ctx, runner.CreateRunParams{Run: r, Key: key})
				if a.writeErr != nil {
					return idempotency.ClaimResult{}, a.writeErr
				}
				return res.ClaimResult, err
			}}, nil
		},
		Fallback: func(context.Context) (*idempotency.Response, error) {
			a.fallbacks.Add(1)
			if a.prepareErr != nil {
				return &idempotency.Response{Status: http.StatusBadRequest, Body: []byte(`{"error":"bad input"}`)}, nil
			}
			return &idempotency.Response{Status: http.StatusOK, Body: []byte(`{"data":{"runId":"owner"}}`), RunID: "owner"}, nil
		},
	}
}

func newAdmitter(t *testing.T, tune func(*idempotency.Config)) (*harness, *admitter) {
	t.Helper()
	st := openStore(t)
	return newHarness(t, st, tune), &admitter{st: st}
}

// TestAdmitOneWrite: a free key is admitted in one write that keeps the answer naming the
// run; a retry replays it by the record's RunID without preparing anything; another
// request with the key is a mismatch.
func TestAdmitOneWrite(t *testing.T) {
	t.Parallel()
	h, a := newAdmitter(t, nil)
	ctx := context.Background()
	first, err := h.svc.Admit(ctx, runRequest("p:alice", "k"), a.admission())
	require.NoError(t, err)
	require.False(t, first.Replayed)
	require.Equal(t, http.StatusAccepted, first.Status)
	rec, err := h.svc.Key(ctx, "p:alice", "k")
	require.NoError(t, err)
	require.Equal(t, idempotency.StateDone, rec.State, "never in progress")
	require.Equal(t, first.RunID, rec.RunID)
	_, err = a.st.GetRun(ctx, first.RunID)
	require.NoError(t, err, "the run is written with its key")

	again, err := h.svc.Admit(ctx, runRequest("p:alice", "k"), a.admission())
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.RunID, again.RunID)
	require.Equal(t, first.Body, again.Body)
	require.EqualValues(t, 1, a.prepared.Load(), "a replay prepares nothing")

	other := runRequest("p:alice", "k")
	other.Body = []byte(`{"orderId":"2002"}`)
	_, err = h.svc.Admit(ctx, other, a.admission())
	require.ErrorIs(t, err, idempotency.ErrKeyMismatch)
	require.Zero(t, a.fallbacks.Load())
	require.InDelta(t, 1, h.count(t, "new"), 0)
	require.InDelta(t, 1, h.count(t, "replay"), 0)
}

func TestAdmitLimit(t *testing.T) {
	t.Parallel()
	h, a := newAdmitter(t, func(c *idempotency.Config) { c.MaxKeys = 1 })
	ctx := context.Background()
	_, err := h.svc.Admit(ctx, runRequest("p:alice", "k1"), a.admission())
	require.NoError(t, err)
	_, err = h.svc.Admit(ctx, runRequest("p:alice", "k2"), a.admission())
	var limit *idempotency.LimitError
	require.ErrorAs(t, err, &limit)
	_, err = h.svc.Key(ctx, "p:alice", "k2")
	require.ErrorIs(t, err, idempotency.ErrNotFound, "nothing written at the limit")
	runs, _, err := a.st.ListRuns(ctx, runner.ListRunsParams{})
	require.NoError(t, err)
	require.Len(t, runs, 1, "no run written at the limit")
}

// TestAdmitSplit: a write that cannot be one (a start-token conflict) goes claim →
// Fallback → complete, and the answer Fallback gave is kept with its RunID.
func TestAdmitSplit(t *testing.T) {
	t.Parallel()
	h, a := newAdmitter(t, nil)
	a.split = true
	ctx := context.Background()
	resp, err := h.svc.Admit(ctx, runRequest("p:alice", "k"), a.admission())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.Status)
	require.EqualValues(t, 1, a.fallbacks.Load())
	rec, err := h.svc.Key(ctx, "p:alice", "k")
	require.NoError(t, err)
	require.Equal(t, idempotency.StateDone, rec.State)
	require.Equal(t, "owner", rec.RunID)
}

// TestAdmitPrepareError: an invalid request writes nothing and frees the key, unless the
// policy keeps failures (webhooks), which keeps the failure as Fallback answers it.
func TestAdmitPrepareError(t *testing.T) {
	t.Parallel()
	bad := errors.New("invalid input")
	tests := []struct {
		name   string
		policy idempotency.Policy
		kept   bool
	}{
		{"failures not kept", idempotency.Policy{}, false},
		{"webhook keeps failures", idempotency.Policy{KeepFailures: true, EvictOldest: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, a := newAdmitter(t, nil)
			a.prepareErr = bad
			req := runRequest("w:wf", "k")
			req.Policy = tt.policy
			resp, err := h.svc.Admit(context.Background(), req, a.admission())
			_, getErr := h.svc.Key(context.Background(), "w:wf", "k")
			if !tt.kept {
				require.ErrorIs(t, err, bad)
				require.ErrorIs(t, getErr, idempotency.ErrNotFound)
				return
			}
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, resp.Status)
			require.NoError(t, getErr)
			replay, err := h.svc.Admit(context.Background(), req, a.admission())
			require.NoError(t, err)
			require.True(t, replay.Replayed)
			require.Equal(t, http.StatusBadRequest, replay.Status)
		})
	}
}

// TestAdmitWaitsForDo: a retry while the same request is in progress on Do's path waits for
// it and replays its answer, writing nothing: in a scope whose answers are held the write
// finds the key in progress; in a webhook's the read before it does, and nothing is
// prepared.
func TestAdmitWaitsForDo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		scope    string
		policy   idempotency.Policy
		prepared int64
	}{
		{"held scope", "p:alice", idempotency.Policy{}, 1},
		{"webhook scope", "w:wf", idempotency.Policy{KeepFailures: true, EvictOldest: true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := &admitter{st: openStore(t)}
			st := &seenGets{Store: a.st, seen: make(chan struct{})}
			h := newHarness(t, st, func(c *idempotency.Config) { c.InProgressWait = time.Minute })
			ctx := context.Background()
			req := runRequest(tt.scope, "k")
			req.Policy = tt.policy
			entered, release := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, err := h.svc.Do(ctx, req, func(context.Context) (*idempotency.Response, error) {
					close(entered)
					<-release
					return &idempotency.Response{Status: http.StatusAccepted, Body: []byte(`{}`), RunID: "first"}, nil
				})
				done <- err
			}()
			<-entered
			var wg sync.WaitGroup
			wg.Go(func() {
				resp, err := h.svc.Admit(ctx, req, a.admission())
				require.NoError(t, err)
				require.True(t, resp.Replayed)
				require.Equal(t, "first", resp.RunID)
			})
			<-st.seen // the retry has read the key in progress: only now may the first finish
			close(release)
			require.NoError(t, <-done)
			wg.Wait()
			require.Equal(t, tt.prepared, a.prepared.Load())
			require.Zero(t, a.fallbacks.Load())
			runs, _, err := a.st.ListRuns(ctx, runner.ListRunsParams{})
			require.NoError(t, err)
			require.Empty(t, runs, "nothing was written for a key in progress")
		})
	}
}

// seenGets is a store that closes seen once its first read of a key has answered.
type seenGets struct {
	idempotency.Store
	seen chan struct{}
	once sync.Once
}

func (s *seenGets) Get(ctx context.Context, scope, key string, now time.Time) (*idempotency.Record, error) {
	defer s.once.Do(func() { close(s.seen) })
	return s.Store.Get(ctx, scope, key, now)
}

// failingGets is a store whose reads fail, as when it cannot be reached.
type failingGets struct{ idempotency.Store }

func (failingGets) Get(context.Context, string, string, time.Time) (*idempotency.Record, error) {
	return nil, errors.New("connection refused")
}

// TestAdmitStoreDown: when the store cannot be read, the request goes through without its
// key (SPEC §4 rule 9) where Admit reads it: first in a webhook's scope, and in a scope
// whose answers are held once Prepare failed.
func TestAdmitStoreDown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		scope      string
		policy     idempotency.Policy
		prepareErr error
		status     int
	}{
		{"webhook scope", "w:wf", idempotency.Policy{KeepFailures: true, EvictOldest: true}, nil, http.StatusOK},
		{"held scope, Prepare fails", "p:alice", idempotency.Policy{}, errors.New("invalid input"), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			h := newHarness(t, failingGets{st}, nil)
			a := &admitter{st: st, prepareErr: tt.prepareErr}
			req := runRequest(tt.scope, "k")
			req.Policy = tt.policy
			resp, err := h.svc.Admit(context.Background(), req, a.admission())
			require.NoError(t, err)
			require.Equal(t, tt.status, resp.Status, "the request goes through without its key")
			require.EqualValues(t, 1, a.fallbacks.Load())
			require.InDelta(t, 1, h.count(t, "store_down"), 0)
		})
	}
}

// TestAdmitWriteFails: in a scope whose answers are held, where the key is not read before
// the write, a failed write reads it: a store that cannot be reached lets the request
// through without its key (SPEC §4 rule 9), a write whose reply was lost answers from the
// key it kept, and a write refused with the key free answers its error.
func TestAdmitWriteFails(t *testing.T) {
	t.Parallel()
	refused := errors.New("disk I/O error")
	tests := []struct {
		name      string
		storeDown bool
		lost      bool
		err       error
		fallbacks int64
	}{
		{name: "store down", storeDown: true, fallbacks: 1},
		{name: "reply lost", lost: true},
		{name: "write refused", err: refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := openStore(t)
			var keys idempotency.Store = st
			if tt.storeDown {
				keys = failingGets{st}
			}
			h := newHarness(t, keys, nil)
			a := &admitter{st: st, writeErr: refused, lost: tt.lost}
			resp, err := h.svc.Admit(ctx, runRequest("p:alice", "k"), a.admission())
			require.Equal(t, tt.fallbacks, a.fallbacks.Load())
			require.InDelta(t, tt.fallbacks, h.count(t, "store_down"), 0)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			if tt.storeDown {
				require.Equal(t, "owner", resp.RunID, "the request goes through without its key")
				return
			}
			rec, err := h.svc.Key(ctx, "p:alice", "k")
			require.NoError(t, err)
			require.Equal(t, rec.RunID, resp.RunID, "the answer the lost write kept")
		})
	}
}

// TestAdmitRace: of racing admissions of one key exactly one run is written; every other
// request replays its answer.
func TestAdmitRace(t *testing.T) {
	t.Parallel()
	h, a := newAdmitter(t, nil)
	const n = 16
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := h.svc.Admit(context.Background(), runRequest("p:alice", "k"), a.admission())
			require.NoError(t, err)
			ids[i] = resp.RunID
		})
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
	runs, _, err := a.st.ListRuns(context.Background(), runner.ListRunsParams{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.InDelta(t, 1, h.count(t, "new"), 0)
}
