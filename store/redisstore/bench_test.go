package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// BenchmarkCreateEnded admits, serially, runs of three set steps written already ended: the
// one write of such a run (runner.Engine.Commit), of a published version. Server time:
// INFO commandstats.
func BenchmarkCreateEnded(b *testing.B) {
	s := fresh(b)
	ctx := context.Background()
	def := json.RawMessage(`{"input":{"type":"object"},"name":"bench","steps":[{"id":"a","set":{"n":"${{ input.n }}"}},` +
		`{"id":"b","set":"${{ steps.a.output.n + 1 }}"},{"id":"c","set":{"done":"${{ steps.b.output }}"}}]}`)
	wf := uuid.Must(uuid.NewV7()).String()
	at := time.Now().UTC()
	require.NoError(b, s.CreateWorkflow(ctx, &catalog.Workflow{ID: wf, Name: "bench", Rev: 1, WebhookDigest: "wh",
		Definition: def, CreatedAt: at, UpdatedAt: at}))
	v, _, err := s.Publish(ctx, wf, "h", auth.Local(), at)
	require.NoError(b, err)
	def = v.Definition
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now().UTC()
		r := &runner.Run{
			ID: uuid.Must(uuid.NewV7()).String(), WorkflowID: wf, Workflow: "bench", Version: 1,
			Environment: runner.EnvProduction, Status: runner.StatusCompleted, Input: json.RawMessage(`{"n":1}`),
			Output: json.RawMessage(`{"done":2}`), CreatedAt: now, StartedAt: &now, FinishedAt: &now, Definition: def,
		}
		for _, id := range []string{"a", "b", "c"} {
			r.Steps = append(r.Steps, &runner.StepRecord{ID: id, StepID: uuid.NewString(), Status: runner.StepCompleted,
				Attempts: 1, Output: json.RawMessage(`{"n":1}`), StartedAt: &now, FinishedAt: &now})
		}
		_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r})
		require.NoError(b, err)
	}
}

// BenchmarkClaimAtCap: a caller whose scope is at its cap of three live keys, besides
// 10,000 abandoned claims, claims again and again, each claim refused (the attack
// TestKeyCapReadsBounded counts in entries read).
func BenchmarkClaimAtCap(b *testing.B) {
	s := fresh(b)
	ctx := context.Background()
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	p := idempotency.ClaimParams{Scope: "p:b", Fingerprint: "fp", Method: http.MethodPost, Path: "/p", Now: now,
		LockTTL: time.Minute}
	for i := range 10_000 {
		p.Key = fmt.Sprint("gone-", i)
		_, err := s.Claim(ctx, p)
		require.NoError(b, err)
	}
	for i := range 3 {
		require.NoError(b, s.Complete(ctx, &idempotency.Record{Scope: p.Scope, Key: fmt.Sprint("live-", i),
			State: idempotency.StateDone, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	}
	p.Now, p.Limit = now.Add(2*time.Minute), 3
	for b.Loop() {
		p.Key = "x"
		res, err := s.Claim(ctx, p)
		require.NoError(b, err)
		require.Equal(b, idempotency.LimitReached, res.Outcome)
	}
}

// BenchmarkListRuns: one page of runs, unfiltered and by filters an index serves or not.
func BenchmarkListRuns(b *testing.B) {
	runnertest.BenchListRuns(b, func(b *testing.B) runner.Store { return fresh(b) })
}
