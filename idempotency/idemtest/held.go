package idemtest

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// testFinishedKeyStands pins what idempotency.Service relies on to answer replays from
// memory: a finished key of a scope that never evicts stays as it was written until its
// ExpiresAt, whatever is claimed, released or limited meanwhile.
func testFinishedKeyStands(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	want := complete(t, s, "p:a", "k", base, time.Hour)
	complete(t, s, "p:a", "other", base, 2*time.Hour)
	now := base.Add(time.Hour - time.Nanosecond)

	res, err := s.Claim(ctx, idempotency.ClaimParams{Scope: "p:a", Key: "k", Fingerprint: "another request",
		Now: now, LockTTL: lockTTL})
	require.NoError(t, err)
	require.Equal(t, idempotency.Existing, res.Outcome, "a claim with another fingerprint")
	require.NoError(t, s.Release(ctx, "p:a", "k"))
	res, err = s.Claim(ctx, limited("p:a", "new", now, 2, false))
	require.NoError(t, err)
	require.Equal(t, idempotency.LimitReached, res.Outcome, "a scope at its cap refuses, evicting nothing")
	got := getRecord(t, s, "p:a", "k", now)
	require.Equal(t, want.Fingerprint, got.Fingerprint)
	require.Equal(t, want.Body, got.Body)
	require.True(t, want.ExpiresAt.Equal(got.ExpiresAt))
	require.Equal(t, idempotency.StateDone, got.State)
}

// CountingStore counts the calls a Service makes to a store.
type CountingStore struct {
	idempotency.Store
	Calls atomic.Int64
}

func (c *CountingStore) Claim(ctx context.Context, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	c.Calls.Add(1)
	return c.Store.Claim(ctx, p)
}

func (c *CountingStore) Complete(ctx context.Context, r *idempotency.Record) error {
	c.Calls.Add(1)
	return c.Store.Complete(ctx, r)
}

func (c *CountingStore) Release(ctx context.Context, scope, key string) error {
	c.Calls.Add(1)
	return c.Store.Release(ctx, scope, key)
}

func (c *CountingStore) Get(ctx context.Context, scope, key string, now time.Time) (*idempotency.Record, error) {
	c.Calls.Add(1)
	return c.Store.Get(ctx, scope, key, now)
}

// testServiceHoldsFinishedKeys: over the backend, a Service answers the replays of a key
// it completed without asking the store, another Service (process) reads it once, an
// expired key is asked of the store again, and a webhook key (its scope evicts at its cap)
// is always asked, so that one evicted is done again.
func testServiceHoldsFinishedKeys(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	now := base
	clock := func() time.Time { return now }
	counted := &CountingStore{Store: s}
	svc, err := idempotency.New(counted, &idempotency.Config{Now: clock, MaxKeys: 1})
	require.NoError(t, err)
	var done atomic.Int64
	fn := func(context.Context) (*idempotency.Response, error) {
		return &idempotency.Response{Status: http.StatusCreated, Body: []byte{byte('0' + done.Add(1))}}, nil
	}
	do := func(svc *idempotency.Service, scope, key string, p idempotency.Policy) *idempotency.Response {
		t.Helper()
		resp, err := svc.Do(ctx, idempotency.Request{Scope: scope, Key: key, Method: http.MethodPost,
			Path: "/api/runs", Body: []byte(`{"a":1}`), Policy: p}, fn)
		require.NoError(t, err)
		return resp
	}

	first := do(svc, "p:held", "k", idempotency.Policy{})
	counted.Calls.Store(0)
	require.Equal(t, first.Body, do(svc, "p:held", "k", idempotency.Policy{}).Body)
	require.Zero(t, counted.Calls.Load(), "the replay asked the store nothing")

	other := &CountingStore{Store: s}
	twin, err := idempotency.New(other, &idempotency.Config{Now: clock})
	require.NoError(t, err)
	for range 2 {
		require.True(t, do(twin, "p:held", "k", idempotency.Policy{}).Replayed)
	}
	require.EqualValues(t, 1, other.Calls.Load(), "another process reads the key once")

	now = now.Add(24 * time.Hour)
	require.False(t, do(svc, "p:held", "k", idempotency.Policy{}).Replayed, "expired: done again")

	hook := idempotency.Policy{KeepFailures: true, EvictOldest: true}
	do(svc, "w:hook", "k1", hook)
	counted.Calls.Store(0)
	require.True(t, do(svc, "w:hook", "k1", hook).Replayed)
	require.NotZero(t, counted.Calls.Load(), "a webhook replay asks the store")
	do(svc, "w:hook", "k2", hook) // evicts k1 at the cap of 1
	require.False(t, do(svc, "w:hook", "k1", hook).Replayed, "an evicted webhook key is done again")
}
