package runnertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
)

// RequireConflict checks that err is a *runner.TokenConflictError naming owner.
func RequireConflict(t *testing.T, err error, env, token, owner string) {
	t.Helper()
	require.ErrorIs(t, err, runner.ErrHookConflict)
	var tc *runner.TokenConflictError
	require.True(t, errors.As(err, &tc), "want *TokenConflictError, got %v", err)
	require.Equal(t, runner.TokenConflictError{Environment: env, Token: token, OwnerRunID: owner}, *tc)
}

func testClaimToken(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r1", 0, -1), NewRun("r2", 0, -1))
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "order:1", "r1")))
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "order:1", "r1")), "the owner again")
	RequireConflict(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "order:1", "r2")),
		runner.EnvProduction, "order:1", "r1")
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvTest, "order:1", "r2")), "environments are separate")

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
		create(t, s, NewRun(id, 0, -1))
	}
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, id := range runs {
		wg.Go(func() {
			<-start
			errs[i] = s.ClaimToken(context.Background(), Hook(runner.EnvProduction, "hot", id))
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
			RequireConflict(t, err, runner.EnvProduction, "hot", winners[0])
		}
	}
	h, err := s.GetHook(context.Background(), runner.EnvProduction, "hot")
	require.NoError(t, err)
	require.Equal(t, winners[0], h.RunID)
}

func testStartToken(t *testing.T, s runner.Store) {
	ctx := context.Background()
	start := func(env, id string) *runner.Hook { return Hook(env, "order:7", id) }
	first := NewRun("first", 0, 0)
	first.StartToken = "order:7"
	require.NoError(t, Create(ctx, s, first, start(runner.EnvProduction, "first")))
	h, err := s.GetHook(ctx, runner.EnvProduction, "order:7")
	require.NoError(t, err)
	require.Equal(t, "first", h.RunID)

	second := NewRun("second", time.Second, 0)
	second.StartToken = "order:7"
	RequireConflict(t, Create(ctx, s, second, start(runner.EnvProduction, "second")),
		runner.EnvProduction, "order:7", "first")
	_, err = s.GetRun(ctx, "second")
	require.ErrorIs(t, err, runner.ErrNotFound, "a conflicting start writes nothing")
	runs, _, err := s.ListRuns(ctx, runner.ListRunsParams{})
	require.NoError(t, err)
	require.Equal(t, []string{"first"}, ids(runs))

	testRun := NewRun("test-run", 0, 0)
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
	create(t, s, NewRun("r", 0, -1))
	_, err := s.EnqueuePayload(ctx, runner.EnvProduction, "tok", json.RawMessage(`1`), base)
	require.ErrorIs(t, err, runner.ErrNotFound, "no owner yet")
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "tok", "r")))

	for i, p := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		owner, err := s.EnqueuePayload(ctx, runner.EnvProduction, "tok", json.RawMessage(p), base.Add(time.Duration(5+i)*time.Second))
		require.NoError(t, err)
		require.Equal(t, "r", owner)
	}
	require.Empty(t, Claim(t, s, "A", 4*time.Second, 1))
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

// testUndelivered: payloads still queued for a run's tokens when it ends are kept on it,
// oldest first, up to runner.MaxUndeliveredPayloads with the rest counted, both on the run
// saved and on the run read back; a run that took every payload keeps none.
func testUndelivered(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r", 0, -1), NewRun("clean", 0, 3*time.Second))
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "tok", "r")))
	require.NoError(t, s.ClaimToken(ctx, Hook(runner.EnvProduction, "other:1", "r")))
	n := runner.MaxUndeliveredPayloads + 2
	for i := range n {
		token := "tok"
		if i == 1 {
			token = "other:1"
		}
		_, err := s.EnqueuePayload(ctx, runner.EnvProduction, token, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), base)
		require.NoError(t, err)
	}
	c := claimOne(t, s, "A", time.Second, "r")
	p := nextPayload(t, s, `{"n":0}`)
	r := Ended(c.Run, runner.StatusCompleted, 2*time.Second)
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{ConsumePayload: p.Seq}))
	for name, got := range map[string]*runner.Undelivered{"saved": r.Undelivered, "read": Get(t, s, "r").Undelivered} {
		require.NotNil(t, got, name)
		require.Len(t, got.Payloads, runner.MaxUndeliveredPayloads, name)
		require.Equal(t, 1, got.Omitted, name)
		require.Equal(t, n-1, got.Count(), name)
		require.Equal(t, "other:1", got.Payloads[0].Token, name)
		require.JSONEq(t, `{"n":1}`, string(got.Payloads[0].Payload), name)
		require.Equal(t, "tok", got.Payloads[1].Token, name)
		require.JSONEq(t, `{"n":2}`, string(got.Payloads[1].Payload), name)
	}
	_, err := s.NextPayload(ctx, "r", runner.EnvProduction, "tok")
	require.ErrorIs(t, err, runner.ErrNotFound, "the queue is dropped")

	c = claimOne(t, s, "B", 3*time.Second, "clean")
	r = Ended(c.Run, runner.StatusCompleted, 2*time.Second)
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}))
	require.Nil(t, r.Undelivered)
	require.Nil(t, Get(t, s, "clean").Undelivered)
}

func nextPayload(t *testing.T, s runner.Store, want string) *runner.Payload {
	t.Helper()
	p, err := s.NextPayload(context.Background(), "r", runner.EnvProduction, "tok")
	require.NoError(t, err)
	require.JSONEq(t, want, string(p.Payload))
	return p
}

// testCreateEnded: a run admitted already ended (its steps ran before its admission) is
// written as a save of its end writes it: no lease, never claimed, its start token only
// checked (another active owner → the conflict and nothing written; else left free), its
// parent made due at its end. One without FinishedAt, or asked to be leased, is refused.
func testCreateEnded(t *testing.T, s runner.Store) {
	ctx := context.Background()
	owner := NewRun("owner", 0, -1)
	owner.StartToken = "order:1"
	require.NoError(t, Create(ctx, s, owner, Hook(runner.EnvProduction, "order:1", "owner")))
	loser := Ended(NewRun("loser", time.Second, -1), runner.StatusCompleted, 2*time.Second)
	loser.StartToken = "order:1"
	RequireConflict(t, Create(ctx, s, loser, Hook(runner.EnvProduction, "order:1", "loser")),
		runner.EnvProduction, "order:1", "owner")
	_, err := s.GetRun(ctx, "loser")
	require.ErrorIs(t, err, runner.ErrNotFound, "a conflicting ended admission writes nothing")

	done := Ended(NewRun("done", time.Second, -1), runner.StatusCompleted, 2*time.Second)
	done.StartToken, done.Output = "order:2", json.RawMessage(`{"ok":true}`)
	done.Steps = []*runner.StepRecord{{ID: "a", StepID: "done/a", Status: runner.StepCompleted, Attempts: 1,
		Output: json.RawMessage(`{"ok":true}`), StartedAt: ptr(base.Add(time.Second)), FinishedAt: ptr(base.Add(time.Second))}}
	res, err := s.CreateRun(ctx, runner.CreateRunParams{Run: done, Start: Hook(runner.EnvProduction, "order:2", "done")})
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome)
	require.Zero(t, res.Lease, "an ended run takes no lease")
	RequireRun(t, done, Get(t, s, "done"))
	_, err = s.GetHook(ctx, runner.EnvProduction, "order:2")
	require.ErrorIs(t, err, runner.ErrNotFound, "an ended run holds no token")
	require.Empty(t, Claim(t, s, "A", time.Hour, 10), "an ended run is never due")

	parent := NewRun("parent", 0, -1)
	parent.Status = runner.StatusWaiting
	create(t, s, parent)
	child := Ended(NewRun("child", time.Second, -1), runner.StatusFailed, 10*time.Second)
	child.ParentRunID = "parent"
	create(t, s, child)
	require.Empty(t, Claim(t, s, "B", 9*time.Second, 10), "the parent is due when the child ended, not before")
	require.Equal(t, []string{"parent"}, Claim(t, s, "B", 10*time.Second, 10), "the parent is woken")

	for name, p := range map[string]runner.CreateRunParams{
		"no finish time": {Run: func() *runner.Run { r := NewRun("unfinished", 0, -1); r.Status = runner.StatusCompleted; return r }()},
		"leased":         {Run: Ended(NewRun("leased", 0, -1), runner.StatusCompleted, 0), Owner: "A", LeaseUntil: base.Add(time.Minute)},
	} {
		_, err := s.CreateRun(ctx, p)
		require.ErrorIs(t, err, runner.ErrEndedRun, name)
		_, err = s.GetRun(ctx, p.Run.ID)
		require.ErrorIs(t, err, runner.ErrNotFound, name)
	}
}

// testCreateRunning: a run admitted with its first steps done and its next attempt started
// keeps its step records and its lease, as a claim and a save of them would.
func testCreateRunning(t *testing.T, s runner.Store) {
	ctx := context.Background()
	r := NewRun("r", 0, 0)
	r.Status, r.StartedAt = runner.StatusRunning, ptr(base)
	r.Steps = []*runner.StepRecord{
		{ID: "a", StepID: "r/a", Status: runner.StepCompleted, Attempts: 1, Output: json.RawMessage(`1`),
			StartedAt: ptr(base), FinishedAt: ptr(base)},
		{ID: "b", StepID: "r/b", Status: runner.StepRunning, Attempts: 1, StartedAt: ptr(base)},
		{ID: "c", StepID: "r/c", Status: runner.StepPending},
	}
	res, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r, Owner: "A", LeaseUntil: base.Add(time.Minute)})
	require.NoError(t, err)
	r.Claims = 1
	RequireRun(t, r, Get(t, s, "r"))
	require.Empty(t, Claim(t, s, "B", 30*time.Second, 10), "the admitter's lease holds")
	r.Steps[1].Status, r.Steps[1].Output, r.Steps[1].FinishedAt = runner.StepCompleted, json.RawMessage(`2`), ptr(base.Add(time.Second))
	require.NoError(t, s.SaveRun(ctx, res.Lease, r, runner.SaveOptions{Steps: []int{1}}))
	RequireRun(t, r, Get(t, s, "r"))
}

// testAskMisses: MissAsk counts the answers to one hook step's question atomically, per
// step, kept by SaveRun and read back by GetRun and ClaimRuns.
func testAskMisses(t *testing.T, s runner.Store) {
	ctx := context.Background()
	create(t, s, NewRun("r", 0, 0), Ended(NewRun("done", time.Second, -1), runner.StatusCompleted, 2*time.Second))

	for want := 1; want <= 2; want++ {
		n, err := s.MissAsk(ctx, "r", 2)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	got := Get(t, s, "r").AskMisses
	require.Equal(t, runner.AskMisses{Step: 2, N: 2}, got)
	require.Equal(t, 0, got.At(1), "a count is the one step's")

	n, err := s.MissAsk(ctx, "r", 3)
	require.NoError(t, err)
	require.Equal(t, 1, n, "another step's count starts again")

	// Counted from many clients at once: none is lost, each count is handed out once.
	const racers = 8
	counts := make(chan int, racers)
	var wg sync.WaitGroup
	for range racers {
		wg.Go(func() {
			n, err := s.MissAsk(ctx, "r", 4)
			assert.NoError(t, err)
			counts <- n
		})
	}
	wg.Wait()
	close(counts)
	var seen []int
	for n := range counts {
		seen = append(seen, n)
	}
	require.ElementsMatch(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, seen)

	// A worker's save (its copy of the run read before the last count) keeps the count.
	c := claimOne(t, s, "A", 0, "r")
	require.Equal(t, runner.AskMisses{Step: 4, N: racers}, c.Run.AskMisses, "a claim reads the count")
	n, err = s.MissAsk(ctx, "r", 4)
	require.NoError(t, err)
	require.Equal(t, racers+1, n)
	r := c.Run
	r.Status, r.WaitingOn = runner.StatusWaiting, &runner.WaitingOn{Hook: "tok"}
	require.NoError(t, s.SaveRun(ctx, c.Lease, r, runner.SaveOptions{}))
	require.Equal(t, runner.AskMisses{Step: 4, N: racers + 1}, Get(t, s, "r").AskMisses, "SaveRun leaves the count")

	_, err = s.MissAsk(ctx, "done", 0)
	require.ErrorIs(t, err, runner.ErrFinished)
	_, err = s.MissAsk(ctx, "nope", 0)
	require.ErrorIs(t, err, runner.ErrNotFound)
}
