// Package runnertest is the conformance suite of runner.Store: every backend runs it from
// its own tests with Run. Times are passed explicitly; nothing waits on the wall clock.
package runnertest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
)

// base is the suite's clock start: nanoseconds set and not UTC, so a backend must keep
// full precision and answer in UTC.
var base = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 3600))

// Base is base, for the suites built on these fixtures (store/storetest).
func Base() time.Time { return base }

// Run runs the suite. newStore must return a fresh, empty, isolated store on each call.
func Run(t *testing.T, newStore func(t *testing.T) runner.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s runner.Store)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"TraceParent", testTraceParent},
		{"List", testList},
		{"ListPagination", testListPagination},
		{"ListFilteredPages", testListFilteredPages},
		{"ListBoundedWalk", testListBoundedWalk},
		{"ListEndsAtBound", testListEndsAtBound},
		{"ListFilteredCursors", testListFilteredCursors},
		{"ListManyReadableWorkflows", testListManyReadableWorkflows},
		{"ClaimDueOnly", testClaimDueOnly},
		{"ClaimExpiredLease", testClaimExpiredLease},
		{"ClaimRace", testClaimRace},
		{"SaveRun", testSaveRun},
		{"ManySteps", testManySteps},
		{"PartialStepSave", testPartialStepSave},
		{"ClaimsCount", testClaimsCount},
		{"SaveLostLease", testSaveLostLease},
		{"SaveOtherRunsLease", testSaveOtherRunsLease},
		{"TerminalSave", testTerminalSave},
		{"WakeNotLostToSave", testWakeNotLostToSave},
		{"ReleaseRun", testReleaseRun},
		{"RenewLeases", testRenewLeases},
		{"RenewRefused", testRenewRefused},
		{"RequestCancel", testRequestCancel},
		{"WakeRun", testWakeRun},
		{"ClaimToken", testClaimToken},
		{"TokenRace", testTokenRace},
		{"StartToken", testStartToken},
		{"CreateEnded", testCreateEnded},
		{"CreateRunning", testCreateRunning},
		{"Payloads", testPayloads},
		{"Undelivered", testUndelivered},
		{"AskMisses", testAskMisses},
		{"DeleteRun", testDeleteRun},
		{"SweepEnded", testSweepEnded},
		{"SweepWorkflow", testSweepWorkflow},
		{"SweepChildOfActiveParent", testSweepChildOfActiveParent},
		{"QueueAdmission", testQueueAdmission},
		{"QueuePromotion", testQueuePromotion},
		{"QueueRace", testQueueRace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// NewRun is a pending production run created at base+created, due at base+due (never due
// by time when due < 0).
func NewRun(id string, created, due time.Duration) *runner.Run {
	r := &runner.Run{
		ID:          id,
		WorkflowID:  "wf-1",
		Workflow:    "orders",
		Version:     1,
		Environment: runner.EnvProduction,
		Status:      runner.StatusPending,
		Input:       json.RawMessage(`{"orderId":"` + id + `"}`),
		Definition:  json.RawMessage(`{"name":"orders"}`),
		CreatedAt:   base.Add(created),
	}
	if due >= 0 {
		r.WakeAt = base.Add(due)
	}
	return r
}

// Ended makes r a run that ended with status at base+at.
func Ended(r *runner.Run, status runner.Status, at time.Duration) *runner.Run {
	r.Status, r.FinishedAt, r.WakeAt = status, ptr(base.Add(at)), time.Time{}
	return r
}

// Create admits r (claiming start when not nil) through CreateRun with neither a key nor a
// lease, as a run submitted elsewhere; an outcome other than Claimed is an error.
func Create(ctx context.Context, s runner.Store, r *runner.Run, start *runner.Hook) error {
	res, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r, Start: start})
	if err == nil && res.Outcome != idempotency.Claimed {
		err = fmt.Errorf("creating run %s: outcome %d", r.ID, res.Outcome)
	}
	return err
}

func create(t *testing.T, s runner.Store, runs ...*runner.Run) {
	t.Helper()
	for _, r := range runs {
		require.NoError(t, Create(context.Background(), s, r, nil))
	}
}

// Get reads run id, which must exist.
func Get(t *testing.T, s runner.Store, id string) *runner.Run {
	t.Helper()
	r, err := s.GetRun(context.Background(), id)
	require.NoError(t, err)
	return r
}

// claimed leases up to limit runs due at base+at to owner for a minute.
func claimed(t *testing.T, s runner.Store, owner string, at time.Duration, limit int) []runner.Claimed {
	t.Helper()
	runs, err := s.ClaimRuns(context.Background(),
		runner.ClaimRunsParams{Owner: owner, Now: base.Add(at), LeaseUntil: base.Add(at + time.Minute), Limit: limit})
	require.NoError(t, err)
	for _, c := range runs {
		require.Equal(t, c.Run.ID, c.Lease.RunID(), "a claim's lease is on its run")
		require.Equal(t, owner, c.Lease.Owner(), "a claim's lease is the claimer's")
	}
	return runs
}

// Claim is claimed, reporting the IDs of the runs claimed.
func Claim(t *testing.T, s runner.Store, owner string, at time.Duration, limit int) []string {
	t.Helper()
	runs := claimed(t, s, owner, at, limit)
	out := make([]string, len(runs))
	for i, c := range runs {
		out[i] = c.Run.ID
	}
	return out
}

// claimOne claims for owner the one run due at base+at, which must be run id.
func claimOne(t *testing.T, s runner.Store, owner string, at time.Duration, id string) runner.Claimed {
	t.Helper()
	runs := claimed(t, s, owner, at, 1)
	require.Len(t, runs, 1)
	require.Equal(t, id, runs[0].Run.ID)
	return runs[0]
}

func ids(runs []*runner.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// Hook is the start token (env, token) of run runID, claimed at base.
func Hook(env, token, runID string) *runner.Hook {
	return &runner.Hook{Environment: env, Token: token, RunID: runID, CreatedAt: base}
}

// requireTime checks that got is want, at full precision, in UTC.
func requireTime(t *testing.T, want, got time.Time) {
	t.Helper()
	require.Truef(t, want.Equal(got), "want %v, got %v", want, got)
	require.Equal(t, time.UTC, got.Location())
}

func requireTimePtr(t *testing.T, want, got *time.Time) {
	t.Helper()
	if want == nil {
		require.Nil(t, got)
		return
	}
	require.NotNil(t, got)
	requireTime(t, *want, *got)
}

func ptr[T any](v T) *T { return &v }

func runIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}
