package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueuedRun: a run past its workflow's concurrency limit is answered 202 queued, with
// its ID; GET shows waitingOn.queue; ?status=queued lists it; a retry of its keyed start
// replays the same run, still queued; a key that evaluates to no string is a 400 with
// nothing written.
func TestQueuedRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(map[string]any{
		"name":        "q-gated",
		"input":       map[string]any{"type": "object"},
		"concurrency": map[string]any{"key": "${{ input.customer }}", "limit": 1},
		"steps":       []any{map[string]any{"id": "wait", "hook": map[string]any{"token": "go-${{ run.id }}"}}},
	})
	first := e.do("POST", "/api/workflows/q-gated/run", map[string]any{"customer": "acme"})
	require.Equal(t, http.StatusAccepted, first.Status, string(first.Raw))
	require.Equal(t, "pending", first.data()["status"])
	queued := e.do("POST", "/api/workflows/q-gated/run", map[string]any{"customer": "acme"}, "Idempotency-Key", "q-1")
	require.Equal(t, http.StatusAccepted, queued.Status, string(queued.Raw))
	require.Equal(t, "queued", queued.data()["status"])
	id := queued.data()["id"].(string)
	require.NotEmpty(t, id)

	replay := e.do("POST", "/api/workflows/q-gated/run", map[string]any{"customer": "acme"}, "Idempotency-Key", "q-1")
	require.Equal(t, "true", replay.Header.Get("Idempotency-Replayed"))
	require.Equal(t, id, replay.data()["id"])
	require.Equal(t, "queued", replay.data()["status"])

	got := e.do("GET", "/api/runs/"+id, nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Raw))
	require.Equal(t, "queued", got.data()["status"])
	require.Nil(t, got.data()["startedAt"])
	require.Equal(t, map[string]any{"queue": map[string]any{"key": "acme", "limit": 1.0,
		"active": []any{first.data()["id"]}, "ahead": 0.0}}, got.data()["waitingOn"])

	list := e.do("GET", "/api/runs?status=queued", nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	listed := list.Body["data"].([]any)
	require.Len(t, listed, 1)
	require.Equal(t, id, listed[0].(map[string]any)["id"])

	bad := e.do("POST", "/api/workflows/q-gated/run", map[string]any{"customer": map[string]any{"a": 1}})
	require.Equal(t, http.StatusBadRequest, bad.Status, string(bad.Raw))
	require.Equal(t, "VALIDATION_ERROR", bad.errorCode())
	require.Len(t, e.do("GET", "/api/runs?workflow=q-gated", nil).Body["data"], 2, "nothing was written")
}
