package redisstore

import (
	"context"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store"
)

// TestUnreachablePipeline: a pipeline sent to a Redis nobody listens for (a port just
// closed) fails with store.ErrUnreachable, and so does each of its commands.
func TestUnreachablePipeline(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(unreachable{})

	pipe := rdb.Pipeline()
	get := pipe.Get(context.Background(), "k")
	_, err = pipe.Exec(context.Background())
	require.ErrorIs(t, err, store.ErrUnreachable)
	require.ErrorIs(t, get.Err(), store.ErrUnreachable)
}
