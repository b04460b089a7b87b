package runnertest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// requireConflict checks that err is a *runner.TokenConflictError naming owner.
func requireConflict(t *testing.T, err error, env, token, owner string) {
	t.Helper()
	require.ErrorIs(t, err, runner.ErrHookConflict)
	var tc *runner.TokenConflictError
	require.True(t, errors.As(err, &tc), "want *TokenConflictError, got %v", err)
	require.Equal(t, runner.TokenConflictError{Environment: env, Token: token, OwnerRunID: owner}, *tc)
}

func testClaimToken(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, newRun("r1", 0, -1), newRun("r2", 0, -1))
	require.NoError(t, s.ClaimToken(ctx, hook(runner.EnvProduction, "order:1", "r1")))
	require.NoError(t, s.ClaimToken(ctx, hook(runner.EnvProduction, "order:1", "r1")), "the owner again")
	requireConflict(t, s.ClaimToken(ctx, hook(runner.EnvProduction, "order:1", "r2")),
		runner.EnvProduction, "order:1", "r1")
	require.NoError(t, s.ClaimToken(ctx, hook(runner.EnvTest, "order:1", "r2")), "environments are separate")

	h, err := s.GetHook(ctx, runner.EnvProduction, "order:1")
	require.NoError(t, err)
	require.Equal(t, "r1", h.RunID)
	require.Equal(t, "order:1", h.Token)
	requireTime(t, base, h.CreatedAt)
	h, err = s.GetHook(ctx, runner.EnvTest, "order:1")
	require.NoError(t, err)
	require.Equal(t, "r2", h.RunID)
	_, err = s.GetHook(ctx, runner.EnvProduction, "order:2")
	require.ErrorIs(t, err, runner.ErrNotFound)
}

func testTokenRace(t *testing.T, s runner.Store) {
	const n = 50
	runs := runIDs("run", n)
	for _, id := range runs {
		create(t, s, newRun(id, 0, -1))
	}
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, id := range runs {
		wg.Go(func() {
			<-start
			errs[i] = s.ClaimToken(context.Background(), hook(runner.EnvProduction, "hot", id))
		})
	}
	close(start)
	wg.Wait()

	var winners []string
	for i, err := range errs {
		if err == nil {
			winners = append(winners, runs[i])
		}
	}
	require.Len(t, winners, 1, "exactly one run owns the token")
	for i, err := range errs {
		if runs[i] != winners[0] {
			requireConflict(t, err, runner.EnvProduction, "hot", winners[0])
		}
	}
	h, err := s.GetHook(context.Background(), runner.EnvProduction, "hot")
	require.NoError(t, err)
	require.Equal(t, winners[0], h.RunID)
}

func testStartToken(t *testing.T, s runner.Store) {
	ctx := context.Background()
	start := func(env, id string) *runner.Hook { return hook(env, "order:7", id) }
	first := newRun("first", 0, 0)
	first.StartToken = "order:7"
	require.NoError(t, Create(ctx, s, first, start(runner.EnvProduction, "first")))
	h, err := s.GetHook(ctx, runner.EnvProduction, "order:7")
	require.NoError(t, err)
	require.Equal(t, "first", h.RunID)

	second := newRun("second", time.Second, 0)
	second.StartToken = "order:7"
	requireConflict(t, Create(ctx, s, second, start(runner.EnvProduction, "second")),
		runner.EnvProduction, "order:7", "first")
	_, err = s.GetRun(ctx, "second")
	require.ErrorIs(t, err, runner.ErrNotFound, "a conflicting start writes nothing")
	runs, _, err := s.ListRuns(ctx, runner.ListRunsParams{})
	require.NoError(t, err)
	require.Equal(t, []string{"first"}, ids(runs))

	testRun := newRun("test-run", 0, 0)
	testRun.Environment = runner.EnvTest
	require.NoError(t, Create(ctx, s, testRun, start(runner.EnvTest, "test-run")), "a test run never blocks production")

	c := claimOne(t, s, "A", 0, "first")
	r := c.Run
	r.Status, r.FinishedAt = runner.StatusFailed, ptr(base.Add(time.Second))
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}))
	require.NoError(t, Create(ctx, s, second, start(runner.EnvProduction, "second")), "the token is free once the owner ended")
}

func testPayloads(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, newRun("r", 0, -1))
	_, err := s.EnqueuePayload(ctx, runner.EnvProduction, "tok", json.RawMessage(`1`), base)
	require.ErrorIs(t, err, runner.ErrNotFound, "no owner yet")
	require.NoError(t, s.ClaimToken(ctx, hook(runner.EnvProduction, "tok", "r")))

	for i, p := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		owner, err := s.EnqueuePayload(ctx, runner.EnvProduction, "tok", json.RawMessage(p), base.Add(time.Duration(5+i)*time.Second))
		require.NoError(t, err)
		require.Equal(t, "r", owner)
	}
	require.Empty(t, claim(t, s, "A", 4*time.Second, 1))
	c := claimOne(t, s, "A", 5*time.Second, "r") // a payload makes its run due
	r := c.Run

	for _, want := range []string{`{"n":1}`, `{"n":2}`} {
		p := nextPayload(t, s, want)
		require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{ConsumePayload: p.Seq}))
		require.Error(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{ConsumePayload: p.Seq}), "consumed once only")
	}
	last := nextPayload(t, s, `{"n":3}`)
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{ConsumePayload: last.Seq}))
	_, err = s.NextPayload(ctx, "r", runner.EnvProduction, "tok")
	require.ErrorIs(t, err, runner.ErrNotFound)
	_, err = s.NextPayload(ctx, "r", runner.EnvTest, "tok")
	require.ErrorIs(t, err, runner.ErrNotFound)
}

func nextPayload(t *testing.T, s runner.Store, want string) *runner.Payload {
	t.Helper()
	p, err := s.NextPayload(context.Background(), "r", runner.EnvProduction, "tok")
	require.NoError(t, err)
	require.JSONEq(t, want, string(p.Payload))
	return p
}
