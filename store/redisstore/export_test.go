package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// OnKeyReads makes s tell f how many index entries each key check of Claim and CreateRun
// read (the number claim_key and create_run return with a claim or a refusal).
func OnKeyReads(s *Store, f func(n int64)) { s.keyReads = f }

// OnRoundTrips makes s call f once for every round trip it makes to Redis, a command
// alone or a pipeline, with the names of the commands it sends in it.
func OnRoundTrips(s *Store, f func(commands []string)) { s.rdb.AddHook(roundTrips(f)) }

// roundTrips is the client hook OnRoundTrips adds.
type roundTrips func(commands []string)

func (roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f([]string{cmd.Name()})
		return next(ctx, cmd)
	}
}

func (f roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		f(names)
		return next(ctx, cmds)
	}
}
