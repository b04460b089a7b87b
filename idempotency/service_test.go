package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// runRequest is the keyed request most tests send through Do.
func runRequest(scope, key string) idempotency.Request {
	return idempotency.Request{Scope: scope, Key: key, Method: http.MethodPost,
		Path: "/api/workflows/w/run", Body: []byte(`{"orderId":"1001"}`)}
}

// answer is an fn for Do that answers status and counts its calls.
func answer(calls *atomic.Int64, status int) func(context.Context) (*idempotency.Response, error) {
	return func(context.Context) (*idempotency.Response, error) {
		n := calls.Add(1)
		return &idempotency.Response{Status: status, Body: []byte(strconv.FormatInt(n, 10))}, nil
	}
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	_, err := idempotency.New(nil, nil)
	require.Error(t, err)
	_, err = idempotency.New(st, &idempotency.Config{TTL: -time.Second})
	require.Error(t, err)
	_, err = idempotency.New(st, &idempotency.Config{MaxKeys: -1})
	require.Error(t, err)
	_, err = idempotency.New(st, &idempotency.Config{SecretKey: make([]byte, 16)})
	require.Error(t, err)
	_, err = idempotency.New(st, nil)
	require.NoError(t, err)
}

// TestKeylessSealedAnswers: without Config.SecretKey a Service seals under a random key of
// its own: its answers replay through it, and another Service answers the key as taken.
func TestKeylessSealedAnswers(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	calls := 0
	fn := func(context.Context) (*idempotency.Response, error) {
		calls++
		return &idempotency.Response{Status: http.StatusCreated, Body: []byte(`{"token":"wh_secret-value"}`)}, nil
	}
	req := idempotency.Request{Scope: "p:a", Key: "k", Method: "POST", Path: "/api/workflows", Policy: idempotency.Policy{Secret: true}}
	svc, err := idempotency.New(st, nil)
	require.NoError(t, err)
	first, err := svc.Do(context.Background(), req, fn)
	require.NoError(t, err)
	rec, err := st.Get(context.Background(), "p:a", "k", time.Now())
	require.NoError(t, err)
	require.NotContains(t, string(rec.Body), "wh_secret-value")
	replay, err := svc.Do(context.Background(), req, fn)
	require.NoError(t, err)
	require.Equal(t, first.Body, replay.Body)
	other, err := idempotency.New(st, nil)
	require.NoError(t, err)
	_, err = other.Do(context.Background(), req, fn)
	require.ErrorIs(t, err, idempotency.ErrAnswerUnreadable)
	require.Equal(t, 1, calls, "nothing was done again")
}

// TestConcurrentRetries: of many racing requests with one key, exactly one is done; every
// other gets its replay or 409. Each principal's key is its own.
func TestConcurrentRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		principals []string
		perEach    int
	}{
		{"one principal", []string{"alice"}, 200},
		{"two principals", []string{"alice", "bob"}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, nil)
			a := &app{}
			srv := h.handler(a)
			codes := make(chan [2]int, len(tt.principals)*tt.perEach)
			var wg sync.WaitGroup
			for _, p := range tt.principals {
				for range tt.perEach {
					wg.Go(func() {
						w := call{key: "same", principal: p}.serve(srv)
						replayed := w.Header().Get(idempotency.HeaderReplayed) == "true"
						codes <- [2]int{w.Code, map[bool]int{false: 0, true: 1}[replayed]}
					})
				}
			}
			wg.Wait()
			close(codes)
			seen := map[[2]int]int{}
			for c := range codes {
				seen[c]++
			}
			require.Equal(t, int64(len(tt.principals)), a.calls.Load())
			require.Equal(t, len(tt.principals), seen[[2]int{201, 0}], "one answer done per principal: %v", seen)
			require.Equal(t, len(tt.principals)*tt.perEach, seen[[2]int{201, 0}]+seen[[2]int{201, 1}]+seen[[2]int{409, 0}], "%v", seen)
		})
	}
}

// flakyStore is the real store with failures on demand.
type flakyStore struct {
	idempotency.Store
	claimDown, completeDown atomic.Bool
}

var errDown = errors.New("connection refused")

func (f *flakyStore) Claim(ctx context.Context, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	if f.claimDown.Load() {
		return idempotency.ClaimResult{}, errDown
	}
	return f.Store.Claim(ctx, p)
}

func (f *flakyStore) Complete(ctx context.Context, r *idempotency.Record) error {
	if f.completeDown.Load() {
		return errDown
	}
	return f.Store.Complete(ctx, r)
}

func TestStoreDown(t *testing.T) {
	t.Parallel()
	st := &flakyStore{Store: openStore(t)}
	h := newHarness(t, st, nil)
	a := &app{}
	srv := h.handler(a)
	secret := `{"card":"4242-secret"}`

	st.claimDown.Store(true)
	for want := int64(1); want <= 2; want++ {
		w := call{key: "k-down", principal: "alice", body: secret}.serve(srv)
		require.Equal(t, http.StatusCreated, w.Code)
		require.Equal(t, want, a.calls.Load(), "the call goes through without its key")
	}
	require.InDelta(t, 2, h.count(t, "store_down"), 0)
	logs := h.logs.String()
	require.Contains(t, logs, "level=WARN")
	require.Contains(t, logs, "key=k-down")
	require.Contains(t, logs, "scope=p:alice")
	require.Contains(t, logs, `route="POST /api/workflows/w/run"`)
	require.NotContains(t, logs, "4242")

	st.claimDown.Store(false)
	require.Equal(t, http.StatusCreated, call{key: "k-down", principal: "alice"}.serve(srv).Code)
	w := call{key: "k-down", principal: "alice"}.serve(srv)
	require.Equal(t, "true", w.Header().Get(idempotency.HeaderReplayed), "recovered")
	require.Equal(t, int64(3), a.calls.Load())
	require.InDelta(t, 2, h.count(t, "store_down"), 0)
}

func TestCompleteFailsStillAnswers(t *testing.T) {
	t.Parallel()
	st := &flakyStore{Store: openStore(t)}
	h := newHarness(t, st, nil)
	st.completeDown.Store(true)
	var calls atomic.Int64
	resp, err := h.svc.Do(t.Context(), runRequest("p:a", "k"), answer(&calls, http.StatusAccepted))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.Status)
	require.False(t, resp.Replayed)
	require.Contains(t, h.logs.String(), "keeping idempotent answer failed")
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, maxKeys(1))
	var calls atomic.Int64
	ctx := t.Context()
	ok := answer(&calls, http.StatusOK)
	_, err := h.svc.Do(ctx, runRequest("p:a", ""), ok)
	require.ErrorIs(t, err, idempotency.ErrInvalidKey)
	_, err = h.svc.Do(ctx, runRequest("p:a", "k"), ok)
	require.NoError(t, err)
	_, err = h.svc.Do(ctx, runRequest("p:a", "k"), ok)
	require.NoError(t, err)
	other := runRequest("p:a", "k")
	other.Body = []byte(`{}`)
	_, err = h.svc.Do(ctx, other, ok)
	require.ErrorIs(t, err, idempotency.ErrKeyMismatch)
	_, err = h.svc.Do(ctx, runRequest("p:a", "k2"), ok)
	require.ErrorIs(t, err, idempotency.ErrLimit)
	for outcome, want := range map[string]float64{"invalid": 1, "new": 1, "replay": 1, "mismatch": 1, "cap": 1, "in_progress": 0} {
		require.InDelta(t, want, h.count(t, outcome), 0, outcome)
	}
	_, err = idempotency.New(openStore(t), &idempotency.Config{Registerer: h.reg})
	require.NoError(t, err, "a second Service shares the registered counters")
}

// TestExpiryFromAnswer: a key is kept 24h from when it was answered, not from when the
// request came in.
func TestExpiryFromAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil)
	a := &app{clock: h.clock, advance: time.Hour}
	srv := h.handler(a)
	c := call{key: "k", principal: "alice"}
	require.Equal(t, http.StatusCreated, c.serve(srv).Code)
	a.advance = 0
	h.clock.Advance(24*time.Hour - time.Nanosecond)
	require.Equal(t, "true", c.serve(srv).Header().Get(idempotency.HeaderReplayed))
	h.clock.Advance(time.Nanosecond)
	require.Empty(t, c.serve(srv).Header().Get(idempotency.HeaderReplayed))
	require.Equal(t, int64(2), a.calls.Load())
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		after time.Duration // since the only kept key was answered
		want  time.Duration
	}{
		{"whole hours", time.Hour, 23 * time.Hour},
		{"rounded up", time.Hour + 500*time.Millisecond, 23 * time.Hour},
		{"at least a second", 24*time.Hour - time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, maxKeys(1))
			var calls atomic.Int64
			_, err := h.svc.Do(t.Context(), runRequest("p:a", "k1"), answer(&calls, http.StatusOK))
			require.NoError(t, err)
			h.clock.Advance(tt.after)
			_, err = h.svc.Do(t.Context(), runRequest("p:a", "k2"), answer(&calls, http.StatusOK))
			var limit *idempotency.LimitError
			require.ErrorAs(t, err, &limit)
			require.ErrorIs(t, err, idempotency.ErrLimit)
			require.Equal(t, tt.want, limit.RetryAfter)
			require.Equal(t, int64(1), calls.Load())
		})
	}
}

// TestTenThousandKeys fills a principal's keys to the real cap through Do. It takes some
// 15 s of SQLite work, and ten minutes and more under the race detector, so it skips
// there; the cap's logic runs under -race with a small cap in TestMiddlewareRules.
func TestTenThousandKeys(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("fills 10,000 keys: skipped with -short and -race")
	}
	t.Parallel()
	h := newHarness(t, nil, nil)
	ctx := t.Context()
	var calls atomic.Int64
	ok := answer(&calls, http.StatusCreated)
	for i := range 10_000 {
		if i == 5_000 {
			h.clock.Advance(time.Hour)
		}
		_, err := h.svc.Do(ctx, runRequest("p:a", "k"+strconv.Itoa(i)), ok)
		require.NoError(t, err)
	}
	h.clock.Advance(90 * time.Minute)
	_, err := h.svc.Do(ctx, runRequest("p:a", "k10000"), ok)
	var limit *idempotency.LimitError
	require.ErrorAs(t, err, &limit)
	require.Equal(t, 21*time.Hour+30*time.Minute, limit.RetryAfter)
	require.Equal(t, int64(10_000), calls.Load(), "nothing done")

	resp, err := h.svc.Do(ctx, runRequest("p:a", "k9999"), ok)
	require.NoError(t, err)
	require.True(t, resp.Replayed)
	require.Equal(t, "10000", string(resp.Body))

	_, err = h.svc.Do(ctx, runRequest("p:b", "k10000"), ok)
	require.NoError(t, err, "another principal has its own cap")
}
