package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/idempotency"
)

// watchStore is the real store that tells when a claim finds its key already taken.
type watchStore struct {
	idempotency.Store
	existing chan struct{}
}

func newWatchStore(st idempotency.Store) *watchStore {
	return &watchStore{Store: st, existing: make(chan struct{}, 1)}
}

func (w *watchStore) Claim(ctx context.Context, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	res, err := w.Store.Claim(ctx, p)
	if err == nil && res.Outcome == idempotency.Existing {
		select {
		case w.existing <- struct{}{}:
		default:
		}
	}
	return res, err
}

// blocked is an fn for Do that signals when it starts and answers status when released.
type blocked struct {
	calls   atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func newBlocked() *blocked {
	return &blocked{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (b *blocked) fn(status int) func(context.Context) (*idempotency.Response, error) {
	return func(context.Context) (*idempotency.Response, error) {
		b.calls.Add(1)
		b.entered <- struct{}{}
		<-b.release
		return &idempotency.Response{Status: status, Body: []byte("first")}, nil
	}
}

type result struct {
	resp *idempotency.Response
	err  error
}

// start runs Do in the background.
func start(ctx context.Context, svc *idempotency.Service, req idempotency.Request, fn func(context.Context) (*idempotency.Response, error)) <-chan result {
	out := make(chan result, 1)
	go func() {
		resp, err := svc.Do(ctx, req, fn)
		out <- result{resp, err}
	}()
	return out
}

// longWait makes a retry wait a long time: only a notice can end its wait before the
// test's context does.
func longWait(c *idempotency.Config) {
	c.InProgressWait = time.Minute
}

func TestInProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		firstStatus int
		wantStatus  int
		wantReplay  bool
		wantCalls   int64
	}{
		{"the retry replays when the first finishes", http.StatusCreated, http.StatusCreated, true, 1},
		{"the retry does the work when the first fails", http.StatusBadGateway, http.StatusOK, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newWatchStore(openStore(t))
			bus := events.New(nil, nil)
			h := newHarness(t, st, func(c *idempotency.Config) {
				longWait(c)
				c.Events = bus
			})
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			first := newBlocked()
			req := runRequest("p:a", "k")
			firstDone := start(ctx, h.svc, req, first.fn(tt.firstStatus))
			<-first.entered
			retry := start(ctx, h.svc, req, answer(&first.calls, http.StatusOK))
			<-st.existing
			close(first.release)
			require.NoError(t, (<-firstDone).err)
			got := <-retry
			require.NoError(t, got.err, "woken by the finish, not by the end of the wait")
			require.Equal(t, tt.wantStatus, got.resp.Status)
			require.Equal(t, tt.wantReplay, got.resp.Replayed)
			require.Equal(t, tt.wantCalls, first.calls.Load())
			require.Equal(t, events.Stats{}, bus.Stats(), "no subscription outlives its waiter")
		})
	}
}

func TestInProgressTimesOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, func(c *idempotency.Config) { c.InProgressWait = 20 * time.Millisecond })
	first := newBlocked()
	req := runRequest("p:a", "k")
	firstDone := start(t.Context(), h.svc, req, first.fn(http.StatusCreated))
	<-first.entered
	_, err := h.svc.Do(t.Context(), req, answer(&first.calls, http.StatusOK))
	require.ErrorIs(t, err, idempotency.ErrInProgress)
	require.InDelta(t, 1, h.count(t, "in_progress"), 0)

	other := req
	other.Body = []byte(`{"orderId":"1002"}`)
	_, err = h.svc.Do(t.Context(), other, answer(&first.calls, http.StatusOK))
	require.ErrorIs(t, err, idempotency.ErrKeyMismatch, "another request is refused at once")

	close(first.release)
	require.NoError(t, (<-firstDone).err)
	resp, err := h.svc.Do(t.Context(), req, answer(&first.calls, http.StatusOK))
	require.NoError(t, err)
	require.True(t, resp.Replayed)
	require.Equal(t, "first", string(resp.Body))
	require.Equal(t, int64(1), first.calls.Load())
}

// TestAbandonedClaim: a claim whose process died holds the key for LockTTL only.
func TestAbandonedClaim(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	h := newHarness(t, st, func(c *idempotency.Config) { c.InProgressWait = time.Millisecond })
	req := runRequest("p:a", "k")
	_, err := st.Claim(t.Context(), idempotency.ClaimParams{
		Scope:       req.Scope,
		Key:         req.Key,
		Fingerprint: idempotency.Fingerprint(req.Method, req.Path, req.Query, req.Body),
		Now:         h.clock.Now(),
		LockTTL:     2 * time.Minute,
	})
	require.NoError(t, err)
	var calls atomic.Int64
	_, err = h.svc.Do(t.Context(), req, answer(&calls, http.StatusOK))
	require.ErrorIs(t, err, idempotency.ErrInProgress)

	h.clock.Advance(2 * time.Minute)
	resp, err := h.svc.Do(t.Context(), req, answer(&calls, http.StatusOK))
	require.NoError(t, err)
	require.False(t, resp.Replayed)
	require.Equal(t, int64(1), calls.Load())
}

func TestPanicFreesTheKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil)
	req := runRequest("p:a", "k")
	require.Panics(t, func() {
		_, _ = h.svc.Do(t.Context(), req, func(context.Context) (*idempotency.Response, error) { panic("boom") })
	})
	var calls atomic.Int64
	resp, err := h.svc.Do(t.Context(), req, answer(&calls, http.StatusOK))
	require.NoError(t, err)
	require.False(t, resp.Replayed)
}

func TestErrorFreesTheKey(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		fn   func(context.Context) (*idempotency.Response, error)
	}{
		{"error", func(context.Context) (*idempotency.Response, error) { return nil, errBoom }},
		{"no response", func(context.Context) (*idempotency.Response, error) { return nil, nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, nil)
			req := runRequest("p:a", "k")
			_, err := h.svc.Do(t.Context(), req, tt.fn)
			require.Error(t, err)
			var calls atomic.Int64
			_, err = h.svc.Do(t.Context(), req, answer(&calls, http.StatusOK))
			require.NoError(t, err)
			require.Equal(t, int64(1), calls.Load())
		})
	}
}
