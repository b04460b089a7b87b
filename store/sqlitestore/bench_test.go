package sqlitestore_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// BenchmarkStepCommit: committing step 1,000 costs what committing step 10 does.
func BenchmarkStepCommit(b *testing.B) {
	runnertest.BenchStepCommit(b, func(b *testing.B) runner.Store { return fresh(b) })
}

// BenchmarkClaimAtCap: a caller whose scope is at its cap of three live keys claims again
// and again, each claim refused, besides 10 or 10,000 abandoned claims: a refusal costs
// the same however many abandoned claims the caller piled up, though they all expire
// before its live keys (answered after them, kept the default 24 h).
func BenchmarkClaimAtCap(b *testing.B) {
	for _, abandoned := range []int{10, 10_000} {
		b.Run(fmt.Sprint("abandoned=", abandoned), func(b *testing.B) {
			s := fresh(b)
			ctx := context.Background()
			now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
			p := idempotency.ClaimParams{Scope: "p:b", Fingerprint: "fp", Method: http.MethodPost, Path: "/p", Now: now,
				LockTTL: time.Minute}
			for i := range abandoned {
				p.Key = fmt.Sprint("gone-", i)
				_, err := s.Claim(ctx, p)
				require.NoError(b, err)
			}
			for i := range 3 {
				require.NoError(b, s.Complete(ctx, &idempotency.Record{Scope: p.Scope, Key: fmt.Sprint("live-", i),
					State: idempotency.StateDone, CreatedAt: now.Add(time.Minute), ExpiresAt: now.Add(time.Minute + 24*time.Hour)}))
			}
			p.Key, p.Now, p.Limit = "x", now.Add(2*time.Minute), 3
			for b.Loop() {
				res, err := s.Claim(ctx, p)
				require.NoError(b, err)
				require.Equal(b, idempotency.LimitReached, res.Outcome)
			}
		})
	}
}

// BenchmarkClaimFresh: a caller claims a new key again and again, its scope under its cap
// (issue #13's fresh idempotency key): the claim's check and its write.
func BenchmarkClaimFresh(b *testing.B) {
	s := fresh(b)
	ctx := context.Background()
	p := idempotency.ClaimParams{Scope: "p:b", Fingerprint: "fp", Method: http.MethodPost, Path: "/p",
		Now: time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC), LockTTL: time.Minute, Limit: 10_000_000}
	i := 0
	for b.Loop() {
		i++
		p.Key = fmt.Sprint("k-", i)
		res, err := s.Claim(ctx, p)
		require.NoError(b, err)
		require.Equal(b, idempotency.Claimed, res.Outcome)
	}
}

// BenchmarkListRuns: one page of runs, unfiltered and by filters an index serves or not.
func BenchmarkListRuns(b *testing.B) {
	runnertest.BenchListRuns(b, func(b *testing.B) runner.Store { return fresh(b) })
}
