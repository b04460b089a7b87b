package runnertest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// waitersShareReads: 20 waiters on B of a run that A works, held at a gate then left
// waiting on a hook, share B's reads of it: at most two per save of A's (the read its
// notice calls for, and one look at the hook's queue with the read after it), not one or
// two per waiter.
func waitersShareReads(t *testing.T, open func(tb testing.TB) (a, b Process)) {
	ctx := context.Background()
	pa, pb := open(t)
	flows := staticFlows(mustDefinition(t, `name: one
input: {type: object}
steps:
  - {id: a, gate: {}}
  - {id: wait, hook: {token: "in:${{ run.id }}"}}
`))
	release := make(chan struct{})
	gate := runner.StepHandlerFunc(func(ctx context.Context, _ *runner.StepContext) (any, error) {
		select {
		case <-release:
			return 1, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	saves := &CountedStore{Store: pa.Store}
	a, _ := crossEngine(t, Process{Store: saves, Events: pa.Events}, flows, runner.Config{Kinds: map[string]runner.StepHandler{"gate": gate}}, true)
	reads := &CountedStore{Store: pb.Store}
	b, _ := crossEngine(t, Process{Store: reads, Events: pb.Events}, flows, runner.Config{}, false)
	res, err := a.Submit(ctx, runner.SubmitParams{Workflow: "one", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	id := res.Run.ID

	const waiters = 20
	waiting := make(chan struct{}, waiters)
	answers := make([]*runner.Run, waiters)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			var err error
			answers[i], err = b.Wait(Joined(ctx, waiting), id, time.Minute)
			require.NoError(t, err)
		})
	}
	for range waiters {
		<-waiting
	}
	close(release)
	wg.Wait()
	for _, r := range answers {
		require.Equal(t, runner.StatusWaiting, r.Status)
		require.Equal(t, "in:"+id, r.WaitingOn.Hook)
	}
	changes := saves.Writes.Load()
	require.LessOrEqual(t, reads.Reads.Load(), 1+2*changes, "B's reads of the run (one as its feed starts) for %d changes", changes)
}

// Joined is ctx for a wait (runner.Engine.Wait) that tells waiting when the wait first
// waits on it: by then the wait follows its run.
func Joined(ctx context.Context, waiting chan<- struct{}) context.Context {
	return &joinedWait{Context: ctx, waiting: waiting}
}

type joinedWait struct {
	context.Context
	once    sync.Once
	waiting chan<- struct{}
}

func (c *joinedWait) Done() <-chan struct{} {
	c.once.Do(func() { c.waiting <- struct{}{} })
	return c.Context.Done()
}

// CountedStore is a store that counts the runs it reads and writes (admits or saves).
type CountedStore struct {
	runner.Store
	Reads, Writes atomic.Int64
}

// GetRun counts one read.
func (s *CountedStore) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	s.Reads.Add(1)
	return s.Store.GetRun(ctx, id)
}

// CreateRun counts one write.
func (s *CountedStore) CreateRun(ctx context.Context, p runner.CreateRunParams) (runner.CreateRunResult, error) {
	s.Writes.Add(1)
	return s.Store.CreateRun(ctx, p)
}

// SaveRun counts one write.
func (s *CountedStore) SaveRun(ctx context.Context, lease runner.Lease, r *runner.Run, opts runner.SaveOptions) error {
	s.Writes.Add(1)
	return s.Store.SaveRun(ctx, lease, r, opts)
}
