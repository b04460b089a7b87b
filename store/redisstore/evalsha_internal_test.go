package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestEvalshaLoadsAMissingScript: a script the server does not hold yet (as after a
// restart) is loaded and run, and its error replies map as run maps them.
func TestEvalshaLoadsAMissingScript(t *testing.T) {
	url := os.Getenv("GORUNNER_TEST_REDIS")
	if url == "" {
		t.Skip("GORUNNER_TEST_REDIS not set")
	}
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	salt := make([]byte, 8)
	_, _ = rand.Read(salt)
	lib, err := luaFS.ReadFile("lua/lib.lua")
	require.NoError(t, err)
	sc := redis.NewScript(string(lib) + "\n" + "-- " + hex.EncodeToString(salt) + "\nif ARGV[1] == 'x' then return fail('GR_NOTFOUND') end\nreturn {KEYS[1], ARGV[1]}")
	exists, err := s.rdb.ScriptExists(ctx, sc.Hash()).Result()
	require.NoError(t, err)
	require.Equal(t, []bool{false}, exists)

	res, err := s.evalsha(ctx, sc, runnerErrs, []any{"evalsha", sc.Hash(), 1, "k", "v"})
	require.NoError(t, err)
	require.Equal(t, []any{"k", "v"}, res)
	_, err = s.evalsha(ctx, sc, runnerErrs, []any{"evalsha", sc.Hash(), 1, "k", "x"})
	require.ErrorIs(t, err, runnerErrs[replyNotFound])
}
