package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/store"
)

// unreachable is the client hook that marks every command's error that comes from not
// reaching Redis with store.ErrUnreachable, so that no caller has to know go-redis's
// errors to tell an outage from a bug.
type unreachable struct{}

func (unreachable) DialHook(next redis.DialHook) redis.DialHook { return next }

func (unreachable) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return markUnreachable(ctx, next(ctx, cmd))
	}
}

func (unreachable) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cerr := cmd.Err(); cerr != nil {
				cmd.SetErr(markUnreachable(ctx, cerr))
			}
		}
		return markUnreachable(ctx, err)
	}
}

// markUnreachable wraps err with store.ErrUnreachable when it is a connection error (a
// network error, a connection closed under a command, no pooled connection in time) or
// the error reply of a Redis that cannot serve yet, the command not run: loading its data
// after a restart, busy in a script, its master down, at its client limit. Any other error
// reply of Redis, and any error once ctx is done (the caller gave up), stay as they are.
func markUnreachable(ctx context.Context, err error) error {
	var netErr net.Error
	switch {
	case err == nil || ctx.Err() != nil || errors.Is(err, store.ErrUnreachable):
		return err
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		redis.IsLoadingError(err), redis.HasErrorPrefix(err, "BUSY "), redis.IsMasterDownError(err),
		redis.IsMaxClientsError(err):
		return fmt.Errorf("%w: %w", store.ErrUnreachable, err)
	}
	return err
}
