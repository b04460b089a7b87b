package redisstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/runner"
)

// A concurrency key (runner.Store.QueuePlace) keeps two structures beside its runs: the
// lex sorted set of its queued runs' sort keys (oldest first) and the set of its active
// runs' IDs. create_run counts the set and queues past the limit; save_run's end leaves
// them and promotes (lib.lua's promote): each in its own script, so atomic on the server.

// QueuePlace reads where queued run r stands: its key's active runs (at most
// runner.MaxQueueActiveShown, in ID order) and the count of its older queued runs.
func (s *Store) QueuePlace(ctx context.Context, r *runner.Run) (runner.QueuePlace, error) {
	var p runner.QueuePlace
	if r.Concurrency == nil {
		return p, nil
	}
	scope := concurrencyScope(*r.Concurrency, r.WorkflowID, r.Environment)
	var active *redis.StringSliceCmd
	var ahead *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		active = pipe.SMembers(ctx, s.k.concurrencyActive(scope))
		ahead = pipe.ZLexCount(ctx, s.k.concurrencyQueue(scope), "-", "("+sortKey(r.CreatedAt, r.ID))
		return nil
	})
	if err != nil {
		return p, wrapErr(fmt.Sprintf("reading the queue of run %s", r.ID), err)
	}
	ids := active.Val()
	slices.Sort(ids)
	if len(ids) > runner.MaxQueueActiveShown {
		ids = ids[:runner.MaxQueueActiveShown]
	}
	if len(ids) > 0 {
		p.Active = ids
	}
	p.Ahead = int(ahead.Val())
	return p, nil
}
