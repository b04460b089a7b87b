package idempotency_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// TestKeysNameTheRequestAndRun: a listed key says which request it was first used for and
// which run its answer named (Response.RunID, set by whoever made the answer), also when
// the answer was too big to keep.
func TestKeysNameTheRequestAndRun(t *testing.T) {
	h := newHarness(t, nil, func(c *idempotency.Config) { c.MaxBody = 200 })
	ctx := context.Background()
	tests := []struct {
		key, path, body string
		state           idempotency.State
		runID           string
	}{
		{"run", "/api/workflows/greet/run", `{"data":{"id":"r1","workflowId":"w1","status":"pending"}}`, idempotency.StateDone, "r1"},
		{"resume", "/api/hooks/t/resume", `{"data":{"token":"t","runId":"r2"}}`, idempotency.StateDone, "r2"},
		{"create", "/api/workflows", `{"data":{"id":"w9","name":"x"}}`, idempotency.StateDone, ""},
		{"big", "/api/workflows/greet/run", `{"data":{"id":"r3","workflowId":"w1","output":"` + strings.Repeat("x", 300) + `"}}`, idempotency.StateTaken, "r3"},
	}
	for _, tc := range tests {
		_, err := h.svc.Do(ctx, idempotency.Request{Scope: "p:a", Key: tc.key, Method: "post", Path: tc.path},
			func(context.Context) (*idempotency.Response, error) {
				return &idempotency.Response{Status: http.StatusAccepted, Body: []byte(tc.body), RunID: tc.runID}, nil
			})
		require.NoError(t, err)
		h.clock.Advance(time.Second)
	}
	recs, next, err := h.svc.Keys(ctx, "p:a", "", 0)
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, recs, len(tests))
	for i, tc := range tests {
		r := recs[len(tests)-1-i]
		require.Equal(t, tc.key, r.Key)
		require.Equal(t, tc.state, r.State, tc.key)
		require.Equal(t, tc.runID, r.RunID, tc.key)
		require.Equal(t, "POST", r.Method)
		require.Equal(t, tc.path, r.Path)
		require.True(t, epoch.Add(time.Duration(i)*time.Second).Equal(r.CreatedAt))
	}
	one, err := h.svc.Key(ctx, "p:a", "resume")
	require.NoError(t, err)
	require.JSONEq(t, tests[1].body, string(one.Body))
	_, err = h.svc.Key(ctx, "p:b", "resume")
	require.ErrorIs(t, err, idempotency.ErrNotFound)
}

// TestAbandoned: only an in-progress claim whose lock has run out may be taken over.
func TestAbandoned(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		state idempotency.State
		lock  time.Time
		want  bool
	}{
		{"lock running", idempotency.StateInProgress, now.Add(time.Second), false},
		{"lock ends now", idempotency.StateInProgress, now, true},
		{"lock ran out", idempotency.StateInProgress, now.Add(-time.Second), true},
		{"done", idempotency.StateDone, now.Add(-time.Second), false},
		{"taken", idempotency.StateTaken, now.Add(-time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &idempotency.Record{State: tc.state, LockedUntil: tc.lock}
			require.Equal(t, tc.want, r.Abandoned(now))
		})
	}
}

// TestValidKey: a key is 1 to MaxKeyLength characters of valid UTF-8, counted as runes,
// not bytes.
func TestValidKey(t *testing.T) {
	t.Parallel()
	require.False(t, idempotency.ValidKey(""))
	require.True(t, idempotency.ValidKey("k"))
	require.True(t, idempotency.ValidKey(strings.Repeat("é", idempotency.MaxKeyLength)))
	require.False(t, idempotency.ValidKey(strings.Repeat("k", idempotency.MaxKeyLength+1)))
	require.False(t, idempotency.ValidKey("k\xff\xfe"))
}
