package redisstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store"
	"github.com/gorunner/gorunner/store/redisstore"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
	"github.com/gorunner/gorunner/store/storetest"
)

// The helpers of every test here, shared with the interop module's benchmarks.
var (
	redisURL     = redistest.URL
	freshAt      = redistest.Open
	randomHex    = redistest.RandomHex
	deletePrefix = redistest.DeletePrefix
	redisClient  = redistest.Client
)

// fresh opens a store under a random key prefix and deletes its keys (and only its keys)
// when the test ends.
func fresh(t testing.TB) *redisstore.Store {
	t.Helper()
	s, _, _ := freshAt(t)
	return s
}

// TestContracts runs every store contract's conformance suite on this backend.
func TestContracts(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Backend { return fresh(t) })
}

// freshRaw is freshAt with a client of its own on the same Redis, for tests that read or
// write the store's keys (under prefix) directly.
func freshRaw(t testing.TB) (s *redisstore.Store, rdb *redis.Client, prefix string) {
	t.Helper()
	s, url, prefix := freshAt(t)
	return s, redisClient(t, url), prefix
}

// TestLegacyStepsField reads a run stored before steps had a hash field each (one 'steps'
// field with a JSON array) and checks that a partial save rewrites them all, a field each.
func TestLegacyStepsField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, rdb, prefix := freshRaw(t)
	now := time.Now().UTC()
	r := &runner.Run{ID: "old", WorkflowID: "wf", Workflow: "wf", Environment: runner.EnvProduction,
		Status: runner.StatusPending, Input: json.RawMessage(`{}`), CreatedAt: now, WakeAt: now,
		Steps: []*runner.StepRecord{{ID: "a", Status: runner.StepPending}, {ID: "b", Status: runner.StepPending}}}
	require.NoError(t, runnertest.Create(ctx, s, r, nil))

	key := prefix + "run:old"
	require.NoError(t, rdb.HDel(ctx, key, "step:0", "step:1").Err())
	require.NoError(t, rdb.HSet(ctx, key, "steps",
		`[{"id":"a","status":"completed","output":{"n":1}},{"id":"b","status":"pending"}]`).Err())

	claimed, err := s.ClaimRuns(ctx, runner.ClaimRunsParams{Owner: "A", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	got := claimed[0].Run
	require.Len(t, got.Steps, 2)
	require.JSONEq(t, `{"n":1}`, string(got.Steps[0].Output))
	got.Steps[1].Status = runner.StepCompleted
	require.NoError(t, s.SaveRun(ctx, claimed[0].Lease, got, runner.SaveOptions{Steps: []int{1}}))

	fields, err := rdb.HKeys(ctx, key).Result()
	require.NoError(t, err)
	require.NotContains(t, fields, "steps")
	require.Subset(t, fields, []string{"step:0", "step:1"})
	got, err = s.GetRun(ctx, "old")
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(got.Steps[0].Output))
	require.Equal(t, runner.StepCompleted, got.Steps[1].Status)
}
