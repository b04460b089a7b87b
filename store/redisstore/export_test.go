package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// OnKeyReads makes s tell f how many index entries each key check of Claim and CreateRun
// read (the number claim_key and create_run return with a claim or a refusal).
func OnKeyReads(s *Store, f func(n int64)) { s.keyReads = f }

// OnRoundTrips makes s call f once for every command or pipeline it sends to Redis.
func OnRoundTrips(s *Store, f func()) { s.rdb.AddHook(roundTrips(f)) }

// roundTrips is the client hook OnRoundTrips adds.
type roundTrips func()

func (roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f()
		return next(ctx, cmd)
	}
}

func (f roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		f()
		return next(ctx, cmds)
	}
}

// OnCommands makes s call f with the name of every command it sends to Redis, alone or in
// a pipeline.
func OnCommands(s *Store, f func(name string)) { s.rdb.AddHook(commands(f)) }

// commands is the client hook OnCommands adds.
type commands func(name string)

func (commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f(cmd.Name())
		return next(ctx, cmd)
	}
}

func (f commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			f(c.Name())
		}
		return next(ctx, cmds)
	}
}
