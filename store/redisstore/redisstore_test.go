package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/auth/authtest"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/catalog/catalogtest"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/idempotency/idemtest"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/oauth/oauthtest"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store/redisstore"
)

// redisURL is the Redis the tests use. Without GORUNNER_TEST_REDIS they skip, unless
// GORUNNER_TEST_REDIS_REQUIRED=1 makes that a failure.
func redisURL(t testing.TB) string {
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

// fresh opens a store under a random key prefix and deletes its keys (and only its keys)
// when the test ends.
func fresh(t testing.TB) *redisstore.Store {
	t.Helper()
	s, _, _ := freshAt(t)
	return s
}

// freshAt is fresh, also answering the Redis URL and the store's key prefix.
func freshAt(t testing.TB) (*redisstore.Store, string, string) {
	t.Helper()
	url := redisURL(t)
	prefix := "gorunner-test:" + randomHex(t) + ":"
	s, err := redisstore.Open(context.Background(), url, &redisstore.Config{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		deletePrefix(t, url, prefix)
	})
	return s, url, prefix
}

func randomHex(t testing.TB) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// deletePrefix removes every key under prefix with SCAN and DEL; never FLUSHDB, the
// database is shared.
func deletePrefix(t testing.TB, url, prefix string) {
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

func TestCatalogStore(t *testing.T) {
	t.Parallel()
	catalogtest.Run(t, func(t *testing.T) catalog.Store { return fresh(t) })
}

func TestAuthStore(t *testing.T) {
	t.Parallel()
	authtest.Run(t, func(t *testing.T) auth.Store { return fresh(t) })
}

func TestIdempotencyStore(t *testing.T) {
	t.Parallel()
	idemtest.Run(t, func(t *testing.T) idempotency.Store { return fresh(t) })
}

func TestRunnerStore(t *testing.T) {
	t.Parallel()
	runnertest.Run(t, func(t *testing.T) runner.Store { return fresh(t) })
}

func TestOAuthStore(t *testing.T) {
	t.Parallel()
	oauthtest.Run(t, func(t *testing.T) oauth.Store { return fresh(t) })
}
