// Package redistest opens Redis stores for tests and benchmarks, in this module and in the
// interop module: on the Redis GORUNNER_TEST_REDIS names, each under a random key prefix
// whose keys (and only those: the database is shared, never FLUSHDB) go when the test ends.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/redisstore"
)

// URL is the Redis the tests use. Without GORUNNER_TEST_REDIS they skip, unless
// GORUNNER_TEST_REDIS_REQUIRED=1 makes that a failure.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("GORUNNER_TEST_REDIS")
	if url == "" {
		if os.Getenv("GORUNNER_TEST_REDIS_REQUIRED") == "1" {
			t.Fatal("GORUNNER_TEST_REDIS is not set but GORUNNER_TEST_REDIS_REQUIRED=1")
		}
		t.Skip("GORUNNER_TEST_REDIS is not set")
	}
	return url
}

// Open opens a store under a fresh prefix, answering also the Redis URL and the prefix;
// the store is closed and its keys deleted when t ends.
func Open(t testing.TB) (s *redisstore.Store, url, prefix string) {
	t.Helper()
	url = URL(t)
	prefix = "gorunner-test:" + RandomHex(t) + ":"
	s, err := redisstore.Open(context.Background(), url, &redisstore.Config{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		DeletePrefix(t, url, prefix)
	})
	return s, url, prefix
}

// Client is a client of its own on the Redis url names, closed when t ends, for tests
// that read or write a store's keys directly.
func Client(t testing.TB, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// RandomHex is 16 random hex digits, for key prefixes and queue names.
func RandomHex(t testing.TB) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// DeletePrefix removes every key under prefix with SCAN and DEL.
func DeletePrefix(t testing.TB, url, prefix string) {
	t.Helper()
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			require.NoError(t, rdb.Del(ctx, batch...).Err())
			batch = batch[:0]
		}
	}
	require.NoError(t, iter.Err())
	if len(batch) > 0 {
		require.NoError(t, rdb.Del(ctx, batch...).Err())
	}
}
