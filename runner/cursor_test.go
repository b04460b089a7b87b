package runner_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestListSealsCursors: List hands out cursors that hide the run they point after and that
// open on any engine keyed with the same SecretKey; an engine without one makes a key of
// its own, so its cursors open with it alone; the store's own plain cursor is refused.
func TestListSealsCursors(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	key := bytes.Repeat([]byte{5}, 32)
	e := h.engine(runner.Config{SecretKey: key})
	name := h.define(echoX("pages", "{type: object}"))
	var ids []string
	for range 3 {
		ids = append(ids, h.run(e, name, `{"x": 1}`, runner.StatusCompleted).ID)
	}
	first, cursor, err := e.List(ctx, runner.ListRunsParams{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, ids[2], first[0].ID)
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	require.NoError(t, err)
	require.NotContains(t, string(raw), ids[2], "the cursor hides the run it points after")

	shared, own, other := h.newEngine(runner.Config{SecretKey: key}), h.newEngine(runner.Config{}), h.newEngine(runner.Config{})
	next, _, err := shared.List(ctx, runner.ListRunsParams{Limit: 1, Cursor: cursor})
	require.NoError(t, err, "a process sharing the secret key reads the cursor")
	require.Equal(t, ids[1], next[0].ID)
	_, _, err = own.List(ctx, runner.ListRunsParams{Limit: 1, Cursor: cursor})
	require.ErrorIs(t, err, runner.ErrInvalidCursor, "another key")

	_, ownCursor, err := own.List(ctx, runner.ListRunsParams{Limit: 1})
	require.NoError(t, err)
	_, _, err = own.List(ctx, runner.ListRunsParams{Limit: 1, Cursor: ownCursor})
	require.NoError(t, err, "an engine's random key opens its own cursors")
	_, _, err = other.List(ctx, runner.ListRunsParams{Limit: 1, Cursor: ownCursor})
	require.ErrorIs(t, err, runner.ErrInvalidCursor, "and no other engine's")

	_, plain, err := h.store.ListRuns(ctx, runner.ListRunsParams{Limit: 1})
	require.NoError(t, err)
	_, _, err = e.List(ctx, runner.ListRunsParams{Limit: 1, Cursor: plain})
	require.ErrorIs(t, err, runner.ErrInvalidCursor, "the store's plain cursor is not one List gave out")

	_, err = runner.New(h.store, h.flows, nil, &runner.Config{SecretKey: make([]byte, 16)})
	require.ErrorContains(t, err, "SecretKey")
}
