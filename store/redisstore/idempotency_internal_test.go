package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// TestClaimResultRefusesOddReplies: a reply claimResult does not know, or a refusal that
// names no oldest key, is an error, never a panic or a claim.
func TestClaimResultRefusesOddReplies(t *testing.T) {
	t.Parallel()
	s := &Store{}
	for _, reply := range []any{nil, "OK", []any{}, []any{int64(1)}, []any{"limit"}, []any{"other", "x"}} {
		_, err := s.claimResult(reply, idempotency.ClaimParams{}, nil)
		require.Error(t, err, "%v", reply)
	}
	res, err := s.claimResult([]any{"limit", "00000000000000000007", int64(1)}, idempotency.ClaimParams{}, nil)
	require.NoError(t, err)
	require.Equal(t, idempotency.LimitReached, res.Outcome)
	require.Equal(t, time.Unix(0, 7).UTC(), res.Oldest.UTC())
}
