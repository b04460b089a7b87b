package redisstore_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog/catalogtest"
)

// TestSealedWebhooks reads every key of the store, its fields, members and values, as
// one holding a dump of the Redis would: no webhook token is in it, yet each works.
func TestSealedWebhooks(t *testing.T) {
	t.Parallel()
	s, rdb, prefix := freshRaw(t)
	catalogtest.SealedWebhooks(t, s, func(t *testing.T) []byte { return dump(t, rdb, prefix) })
}

// dump is every key under prefix with its contents, each item followed by a newline.
func dump(t *testing.T, rdb *redis.Client, prefix string) []byte {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer
	write := func(items ...string) {
		for _, s := range items {
			out.WriteString(s)
			out.WriteByte('\n')
		}
	}
	iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		write(key)
		kind, err := rdb.Type(ctx, key).Result()
		require.NoError(t, err)
		switch kind {
		case "hash":
			m, err := rdb.HGetAll(ctx, key).Result()
			require.NoError(t, err)
			for f, v := range m {
				write(f, v)
			}
		case "string":
			v, err := rdb.Get(ctx, key).Result()
			require.NoError(t, err)
			write(v)
		case "zset":
			v, err := rdb.ZRange(ctx, key, 0, -1).Result()
			require.NoError(t, err)
			write(v...)
		case "set":
			v, err := rdb.SMembers(ctx, key).Result()
			require.NoError(t, err)
			write(v...)
		case "list":
			v, err := rdb.LRange(ctx, key, 0, -1).Result()
			require.NoError(t, err)
			write(v...)
		default:
			t.Fatalf("key %s: a %s, which dump does not read", key, kind)
		}
	}
	require.NoError(t, iter.Err())
	return out.Bytes()
}
