package storetest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store"
)

// RunCatalogVersion runs the suite of admissions checked against the catalog version: the
// store refuses a stale one whole (runner.ErrStaleCatalog, nothing written), and the engine
// admits from the catalog's kept answer without reading the version, resolving again only
// when the write refuses. newStore must return a fresh, empty, isolated store on each call.
func RunCatalogVersion(t *testing.T, newStore func(t *testing.T) store.Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Backend)
	}{
		{"StoreRefusesStale", testStaleRefused},
		{"EngineLocal", func(t *testing.T, s store.Backend) { testKeptTargets(t, s, true) }},
		{"EngineElsewhere", func(t *testing.T, s store.Backend) { testKeptTargets(t, s, false) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// bumpCatalog moves the catalog version with a catalog write (a new workflow) and returns
// the version now.
func bumpCatalog(t *testing.T, s store.Backend, id string) int64 {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.CreateWorkflow(ctx, &catalog.Workflow{ID: id, Name: id, Rev: 1, WebhookDigest: "wh-" + id,
		Definition: []byte(`{"name":"` + id + `","steps":[]}`), CreatedAt: base, UpdatedAt: base}))
	v, err := s.CatalogVersion(ctx)
	require.NoError(t, err)
	return v
}

// testStaleRefused: an admission at the version that stands is written; one at a version
// the catalog has moved from writes nothing (no run, its key still free, its token
// unclaimed), whatever else it carries, and answers ErrStaleCatalog, but for a live key or
// a full scope, whose outcome is answered first; version 0 is not checked.
func testStaleRefused(t *testing.T, s store.Backend) {
	ctx := context.Background()
	at := bumpCatalog(t, s, "w1")
	now := base.Add(time.Second)

	cur := runnertest.NewRun("current", 0, 0)
	cur.StartToken = "order:1"
	res, err := s.CreateRun(ctx, runner.CreateRunParams{Run: cur, CatalogVersion: at,
		Start: runnertest.Hook(runner.EnvProduction, "order:1", "current"), Key: keyWrite("k1", "current", now, 10, false)})
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Outcome)
	runnertest.RequireRun(t, cur, runnertest.Get(t, s, "current"))

	moved := bumpCatalog(t, s, "w2")
	require.NotEqual(t, at, moved)
	for name, p := range map[string]runner.CreateRunParams{
		"pending":        {Run: runnertest.NewRun("stale", 0, 0), CatalogVersion: at},
		"ended":          {Run: runnertest.Ended(runnertest.NewRun("stale-ended", 0, -1), runner.StatusCompleted, time.Second), CatalogVersion: at},
		"leased":         {Run: runnertest.NewRun("stale-leased", 0, 0), CatalogVersion: at, Owner: "A", LeaseUntil: base.Add(time.Minute)},
		"keyed":          {Run: runnertest.NewRun("stale-keyed", 0, 0), CatalogVersion: at, Key: keyWrite("k2", "stale-keyed", now, 10, false)},
		"with token":     {Run: runnertest.NewRun("stale-token", 0, 0), CatalogVersion: at, Start: runnertest.Hook(runner.EnvProduction, "order:2", "stale-token")},
		"a future clock": {Run: runnertest.NewRun("stale-future", 0, 0), CatalogVersion: moved + 1},
	} {
		_, err := s.CreateRun(ctx, p)
		require.ErrorIs(t, err, runner.ErrStaleCatalog, name)
		_, err = s.GetRun(ctx, p.Run.ID)
		require.ErrorIs(t, err, runner.ErrNotFound, "%s: no run written", name)
	}
	// The key is checked before the catalog: a live key answers its outcome, a full scope
	// its own, and neither writes anything, so that a retry replays whatever the catalog did.
	live, err := s.CreateRun(ctx, runner.CreateRunParams{Run: runnertest.NewRun("stale-live", 0, 0), CatalogVersion: at, Key: keyWrite("k1", "stale-live", now, 10, false)})
	require.NoError(t, err, "live key")
	require.Equal(t, idempotency.Existing, live.Outcome, "live key")
	require.Equal(t, "current", live.Record.RunID, "live key: the key's own answer")
	full, err := s.CreateRun(ctx, runner.CreateRunParams{Run: runnertest.NewRun("stale-full", 0, 0), CatalogVersion: at, Key: keyWrite("k3", "stale-full", now, 1, false)})
	require.NoError(t, err, "full scope")
	require.Equal(t, idempotency.LimitReached, full.Outcome, "full scope")
	for _, id := range []string{"stale-live", "stale-full"} {
		_, err = s.GetRun(ctx, id)
		require.ErrorIs(t, err, runner.ErrNotFound, "%s: no run written", id)
	}
	_, err = s.Get(ctx, admitScope, "k3", now)
	require.ErrorIs(t, err, idempotency.ErrNotFound, "a full scope takes no key")
	_, err = s.Get(ctx, admitScope, "k2", now)
	require.ErrorIs(t, err, idempotency.ErrNotFound, "a stale admission takes no key")
	_, err = s.GetHook(ctx, runner.EnvProduction, "order:2")
	require.ErrorIs(t, err, runner.ErrNotFound, "a stale admission claims no token")
	require.Equal(t, []string{"current"}, runnertest.Claim(t, s, "A", time.Hour, 10), "nothing stale is due")

	for name, p := range map[string]runner.CreateRunParams{
		"at the version now": {Run: runnertest.NewRun("fresh", 0, -1), CatalogVersion: moved},
		"unchecked":          {Run: runnertest.NewRun("unchecked", 0, -1)},
	} {
		_, err := s.CreateRun(ctx, p)
		require.NoError(t, err, name)
		runnertest.RequireRun(t, p.Run, runnertest.Get(t, s, p.Run.ID))
	}
}

// versionReads counts the catalog version reads of a catalog store.
type versionReads struct {
	catalog.Store
	n atomic.Int64
}

func (v *versionReads) CatalogVersion(ctx context.Context) (int64, error) {
	v.n.Add(1)
	return v.Store.CatalogVersion(ctx)
}

// testKeptTargets: the engine admits from the catalog's kept answer, reading no catalog
// version; a catalog write elsewhere costs one fresh resolution and the run is written as
// prepared; a new version of the workflow itself between Prepare and Commit writes nothing
// (ErrTargetChanged), and Admit prepares again on the new version; an unpublished workflow
// is then refused as such. local: a worker slot is free, so the run starts in its
// admission; else it is written pending.
func testKeptTargets(t *testing.T, s store.Backend, local bool) {
	ctx := context.Background()
	reads := &versionReads{Store: s}
	cat, err := catalog.New(reads, &catalog.Config{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	def := func(v string) []byte {
		return []byte(`{"name": "kept", "input": {"type": "object"}, "steps": [{"id": "a", "set": {"v": "` + v + `"}}]}`)
	}
	w, err := cat.Create(ctx, def("1"))
	require.NoError(t, err)
	_, _, err = cat.Publish(ctx, "kept", auth.Local())
	require.NoError(t, err)
	e, err := runner.New(s, cat, cat, &runner.Config{Concurrency: 4, Owner: "A"})
	require.NoError(t, err)
	if local {
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	}
	p := runner.SubmitParams{Workflow: "kept"}
	submit := func(version int) *runner.Run {
		t.Helper()
		res, err := e.Submit(ctx, p)
		require.NoError(t, err)
		r := runnertest.Get(t, s, res.Run.ID)
		require.Equal(t, version, r.Version)
		require.JSONEq(t, string(def(strconv.Itoa(version))), string(r.Definition))
		if local {
			require.Equal(t, runner.StatusCompleted, r.Status)
		}
		return r
	}

	submit(1) // resolves once, and the catalog keeps the answer
	n := reads.n.Load()
	submit(1)
	submit(1)
	require.Equal(t, n, reads.n.Load(), "an admission from a kept answer reads no catalog version")

	bumpCatalog(t, s, "other")
	submit(1)
	require.Equal(t, n+1, reads.n.Load(), "a catalog write elsewhere costs one fresh resolution")
	submit(1)
	require.Equal(t, n+1, reads.n.Load(), "and the fresh answer is kept")

	a, err := e.Prepare(ctx, p)
	require.NoError(t, err)
	_, err = cat.Update(ctx, w.ID, def("2"), 1)
	require.NoError(t, err)
	_, _, err = cat.Publish(ctx, "kept", auth.Local())
	require.NoError(t, err)
	_, err = e.Commit(ctx, a, nil)
	require.ErrorIs(t, err, runner.ErrTargetChanged)
	_, err = s.GetRun(ctx, a.Run.ID)
	require.ErrorIs(t, err, runner.ErrNotFound, "an admission of a version no longer current writes nothing")
	res, err := e.Admit(ctx, a)
	require.NoError(t, err)
	require.NotEqual(t, a.Run.ID, res.Run.ID, "Admit prepares again")
	require.Equal(t, 2, runnertest.Get(t, s, res.Run.ID).Version)
	submit(2)

	a, err = e.Prepare(ctx, p)
	require.NoError(t, err)
	_, err = cat.Unpublish(ctx, "kept")
	require.NoError(t, err)
	_, err = e.Admit(ctx, a)
	require.ErrorIs(t, err, runner.ErrNotPublished)
	_, err = s.GetRun(ctx, a.Run.ID)
	require.ErrorIs(t, err, runner.ErrNotFound)
}
