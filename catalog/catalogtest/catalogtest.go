// Package catalogtest is the conformance suite of catalog.Store: every backend runs it
// from its own tests with Run, so they all behave as the catalog expects.
package catalogtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
)

// base is the suite's clock start: nanoseconds set, not UTC, so a backend must keep full
// precision and answer in UTC.
var base = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 2*3600))

// publisher publishes the suite's versions: narrowed scopes, which must read back as given.
var publisher = auth.Principal{ID: "tok-publisher", Scopes: auth.Scopes{
	{Permission: auth.WorkflowsWrite}, {Permission: auth.RunsRead, Workflow: "pub"}, {Permission: auth.RunsWrite, Tag: "billing"}}}

// Run runs the suite. newStore must return a fresh, empty, isolated store on each call.
func Run(t *testing.T, newStore func(t *testing.T) catalog.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s catalog.Store)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"Webhook", testWebhook},
		{"SealWebhook", testSealWebhook},
		{"UpdateDraft", testUpdateDraft},
		{"Delete", testDelete},
		{"Publish", testPublish},
		{"Unpublish", testUnpublish},
		{"ListPagination", testListPagination},
		{"CatalogVersion", testCatalogVersion},
		{"Connections", testConnections},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// newWorkflow is a workflow ready to create, its draft naming it.
func newWorkflow(name string) *catalog.Workflow {
	return &catalog.Workflow{
		ID:            "id-" + name,
		Name:          name,
		Title:         "Title of " + name,
		Description:   "Does " + name,
		Rev:           1,
		Definition:    definition(name, 1),
		WebhookDigest: "wh-" + name,
		WebhookSealed: sealedOf(name),
		CreatedAt:     base,
		UpdatedAt:     base,
	}
}

// sealedOf stands for a sealed webhook token: binary, every byte value a store must keep.
func sealedOf(name string) []byte {
	return append([]byte{0, 255, 10, 13}, name...)
}

func definition(name string, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"steps":[{"id":"s%d"}]}`, name, n))
}

func create(t *testing.T, s catalog.Store, name string) *catalog.Workflow {
	t.Helper()
	w := newWorkflow(name)
	require.NoError(t, s.CreateWorkflow(context.Background(), w))
	return w
}

// requireTime checks that got is want, at full precision, in UTC.
func requireTime(t *testing.T, want, got time.Time) {
	t.Helper()
	require.Truef(t, want.Equal(got), "want %v, got %v", want, got)
	require.Equal(t, time.UTC, got.Location())
}

func requireWorkflow(t *testing.T, want, got *catalog.Workflow) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.Title, got.Title)
	require.Equal(t, want.Description, got.Description)
	require.Equal(t, want.Rev, got.Rev)
	require.JSONEq(t, string(want.Definition), string(got.Definition))
	require.Equal(t, want.LatestVersion, got.LatestVersion)
	require.Equal(t, want.Published, got.Published)
	require.Equal(t, want.WebhookDigest, got.WebhookDigest)
	require.Equal(t, want.WebhookSealed, got.WebhookSealed)
	requireTime(t, want.CreatedAt, got.CreatedAt)
	requireTime(t, want.UpdatedAt, got.UpdatedAt)
}

func testCreateAndGet(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	w := create(t, s, "alpha")
	for _, key := range []string{w.ID, w.Name} {
		got, err := s.GetWorkflow(ctx, key)
		require.NoError(t, err)
		requireWorkflow(t, w, got)
	}
	_, err := s.GetWorkflow(ctx, "nope")
	require.ErrorIs(t, err, catalog.ErrNotFound)

	dup := newWorkflow("alpha")
	dup.ID, dup.WebhookDigest = "id-other", "wh-other"
	require.ErrorIs(t, s.CreateWorkflow(ctx, dup), catalog.ErrConflict)
}

func testWebhook(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	w := create(t, s, "hooked")
	got, err := s.GetWorkflowByWebhook(ctx, w.WebhookDigest)
	require.NoError(t, err)
	requireWorkflow(t, w, got)

	require.NoError(t, s.RotateWebhook(ctx, w.ID, "wh-new", sealedOf("new"), base.Add(time.Minute)))
	_, err = s.GetWorkflowByWebhook(ctx, w.WebhookDigest)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	got, err = s.GetWorkflowByWebhook(ctx, "wh-new")
	require.NoError(t, err)
	require.Equal(t, w.ID, got.ID)
	require.Equal(t, "wh-new", got.WebhookDigest)
	require.Equal(t, sealedOf("new"), got.WebhookSealed)
	requireTime(t, base.Add(time.Minute), got.UpdatedAt)

	require.ErrorIs(t, s.RotateWebhook(ctx, "nope", "wh-x", sealedOf("x"), base), catalog.ErrNotFound)
	require.NoError(t, s.DeleteWorkflow(ctx, w.ID, base.Add(time.Hour)))
	_, err = s.GetWorkflowByWebhook(ctx, "wh-new")
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

// testSealWebhook upgrades workflows stored with a plaintext webhook token (no sealed one)
// as an older GoRunner wrote them.
func testSealWebhook(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	old := newWorkflow("old")
	old.WebhookDigest, old.WebhookSealed = "wh_plain", nil
	require.NoError(t, s.CreateWorkflow(ctx, old))
	got, err := s.GetWorkflow(ctx, old.ID)
	require.NoError(t, err)
	require.Empty(t, got.WebhookSealed, "not upgraded yet")
	cv, err := s.CatalogVersion(ctx)
	require.NoError(t, err)

	require.ErrorIs(t, s.SealWebhook(ctx, old.ID, "wh_other", "digest", sealedOf("old")), catalog.ErrNotFound,
		"not the token it holds")
	require.ErrorIs(t, s.SealWebhook(ctx, "nope", "wh_plain", "digest", sealedOf("old")), catalog.ErrNotFound)
	require.NoError(t, s.SealWebhook(ctx, old.ID, "wh_plain", "digest", sealedOf("old")))

	got, err = s.GetWorkflowByWebhook(ctx, "digest")
	require.NoError(t, err)
	want := *old
	want.WebhookDigest, want.WebhookSealed = "digest", sealedOf("old")
	requireWorkflow(t, &want, got) // rev and updatedAt (the ETag) stay
	_, err = s.GetWorkflowByWebhook(ctx, "wh_plain")
	require.ErrorIs(t, err, catalog.ErrNotFound, "the plaintext token is gone from the index")
	after, err := s.CatalogVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, cv, after, "the tool set did not change")

	require.ErrorIs(t, s.SealWebhook(ctx, old.ID, "digest", "again", sealedOf("again")), catalog.ErrNotFound,
		"a sealed workflow is not upgraded again")

	sealed := create(t, s, "sealed")
	require.ErrorIs(t, s.SealWebhook(ctx, sealed.ID, sealed.WebhookDigest, "d2", sealedOf("d2")), catalog.ErrNotFound,
		"one made sealed is not upgraded")

	gone := newWorkflow("gone")
	gone.WebhookDigest, gone.WebhookSealed = "wh_gone", nil
	require.NoError(t, s.CreateWorkflow(ctx, gone))
	require.NoError(t, s.DeleteWorkflow(ctx, gone.ID, base))
	require.ErrorIs(t, s.SealWebhook(ctx, gone.ID, "wh_gone", "d3", sealedOf("gone")), catalog.ErrNotFound)
}

func testUpdateDraft(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	w := create(t, s, "draft")
	create(t, s, "taken")
	now := base.Add(time.Minute)

	upd := &catalog.Workflow{Name: "draft", Title: "T2", Description: "D2", Definition: definition("draft", 2)}
	got, err := s.UpdateDraft(ctx, w.ID, upd, 1, now)
	require.NoError(t, err)
	want := *w
	want.Title, want.Description, want.Definition, want.Rev, want.UpdatedAt = "T2", "D2", upd.Definition, 2, now
	requireWorkflow(t, &want, got)

	_, err = s.UpdateDraft(ctx, w.ID, upd, 1, now)
	require.ErrorIs(t, err, catalog.ErrConflict, "stale expectedRev")
	got, err = s.UpdateDraft(ctx, w.ID, upd, 0, now)
	require.NoError(t, err, "expectedRev 0 skips the check")
	require.Equal(t, 3, got.Rev)

	renamed := &catalog.Workflow{Name: "taken", Definition: definition("taken", 3)}
	_, err = s.UpdateDraft(ctx, w.ID, renamed, 0, now)
	require.ErrorIs(t, err, catalog.ErrConflict, "name of another live workflow")

	renamed.Name = "renamed"
	got, err = s.UpdateDraft(ctx, w.ID, renamed, 3, now)
	require.NoError(t, err)
	require.Equal(t, "renamed", got.Name)
	_, err = s.GetWorkflow(ctx, "draft")
	require.ErrorIs(t, err, catalog.ErrNotFound, "the old name is free")
	_, err = s.GetWorkflow(ctx, "renamed")
	require.NoError(t, err)

	_, err = s.UpdateDraft(ctx, "nope", upd, 0, now)
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

func testDelete(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	w := create(t, s, "doomed")
	v, _, err := s.Publish(ctx, w.ID, "h1", publisher, base)
	require.NoError(t, err)

	require.NoError(t, s.DeleteWorkflow(ctx, w.ID, base.Add(time.Minute)))
	_, err = s.GetWorkflow(ctx, w.ID)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, err = s.GetWorkflow(ctx, w.Name)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.ErrorIs(t, s.DeleteWorkflow(ctx, w.ID, base), catalog.ErrNotFound, "deleted twice")
	require.ErrorIs(t, s.DeleteWorkflow(ctx, "nope", base), catalog.ErrNotFound)

	kept, err := s.GetVersion(ctx, w.ID, v.Version)
	require.NoError(t, err, "admitted runs still read their version")
	require.Equal(t, v.Hash, kept.Hash)

	again := newWorkflow("doomed")
	again.ID, again.WebhookDigest = "id-again", "wh-again"
	require.NoError(t, s.CreateWorkflow(ctx, again), "the name is free again")
	got, err := s.GetWorkflow(ctx, "doomed")
	require.NoError(t, err)
	require.Equal(t, again.ID, got.ID)
	require.Zero(t, got.LatestVersion)
	require.False(t, got.Published)
}

func testPublish(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	w := create(t, s, "pub")
	_, err := s.GetVersion(ctx, w.ID, 0)
	require.ErrorIs(t, err, catalog.ErrNotFound, "never published")
	vs, err := s.ListVersions(ctx, w.ID)
	require.NoError(t, err)
	require.Empty(t, vs)

	v1, created, err := s.Publish(ctx, w.ID, "h1", publisher, base.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, &publisher, v1.PublishedBy, "a version keeps who published it, with its scopes")
	require.Equal(t, 1, v1.Version)
	require.Equal(t, w.ID, v1.WorkflowID)
	require.Equal(t, "h1", v1.Hash)
	require.JSONEq(t, string(w.Definition), string(v1.Definition))
	requireTime(t, base.Add(time.Minute), v1.PublishedAt)

	other := auth.Principal{ID: "other", Scopes: auth.AdminScopes()}
	same, created, err := s.Publish(ctx, w.ID, "h1", other, base.Add(2*time.Minute))
	require.NoError(t, err)
	require.False(t, created, "same hash returns the latest version")
	require.Equal(t, 1, same.Version)
	require.Equal(t, &publisher, same.PublishedBy, "an unchanged version keeps its publisher")
	requireTime(t, v1.PublishedAt, same.PublishedAt)

	_, err = s.UpdateDraft(ctx, w.ID, &catalog.Workflow{Name: "pub", Definition: definition("pub", 2)}, 0, base)
	require.NoError(t, err)
	v2, created, err := s.Publish(ctx, w.ID, "h2", publisher, base.Add(3*time.Minute))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 2, v2.Version)
	require.JSONEq(t, string(definition("pub", 2)), string(v2.Definition))

	got, err := s.GetWorkflow(ctx, w.ID)
	require.NoError(t, err)
	require.True(t, got.Published)
	require.Equal(t, 2, got.LatestVersion)

	latest, err := s.GetVersion(ctx, w.ID, 0)
	require.NoError(t, err)
	require.Equal(t, 2, latest.Version)
	first, err := s.GetVersion(ctx, w.ID, 1)
	require.NoError(t, err)
	require.Equal(t, "h1", first.Hash)
	require.Equal(t, &publisher, first.PublishedBy)
	_, err = s.GetVersion(ctx, w.ID, 3)
	require.ErrorIs(t, err, catalog.ErrNotFound)

	vs, err = s.ListVersions(ctx, w.ID)
	require.NoError(t, err)
	require.Len(t, vs, 2)
	require.Equal(t, []int{2, 1}, []int{vs[0].Version, vs[1].Version}, "newest first")

	_, _, err = s.Publish(ctx, "nope", "h", publisher, base)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, err = s.ListVersions(ctx, "nope")
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

func testUnpublish(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	w := create(t, s, "flip")
	create(t, s, "draft-only")
	_, _, err := s.Publish(ctx, w.ID, "h1", publisher, base)
	require.NoError(t, err)

	ws, _, err := s.ListWorkflows(ctx, catalog.ListWorkflowsParams{PublishedOnly: true})
	require.NoError(t, err)
	require.Equal(t, []string{"flip"}, names(ws))

	got, err := s.Unpublish(ctx, w.ID, base.Add(time.Minute))
	require.NoError(t, err)
	require.False(t, got.Published)
	require.Equal(t, 1, got.LatestVersion, "versions stay")
	ws, _, err = s.ListWorkflows(ctx, catalog.ListWorkflowsParams{PublishedOnly: true})
	require.NoError(t, err)
	require.Empty(t, ws)

	v, created, err := s.Publish(ctx, w.ID, "h1", publisher, base.Add(2*time.Minute))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, 1, v.Version)
	got, err = s.GetWorkflow(ctx, w.ID)
	require.NoError(t, err)
	require.True(t, got.Published, "publishing the same draft publishes again")

	_, err = s.Unpublish(ctx, "nope", base)
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

func names(ws []*catalog.Workflow) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Name
	}
	return out
}

func testListPagination(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	_, _, err := s.ListWorkflows(ctx, catalog.ListWorkflowsParams{Page: catalog.Page{Limit: 2, Cursor: "not a cursor"}})
	require.ErrorIs(t, err, catalog.ErrInvalidCursor)
	want := []string{"a1", "a2", "b1", "b2", "c1", "c2", "d1"}
	for _, i := range []int{4, 0, 6, 2, 5, 1, 3} {
		create(t, s, want[i])
	}
	create(t, s, "gone")
	require.NoError(t, s.DeleteWorkflow(ctx, "id-gone", base))

	var got []string
	cursor, pages := "", 0
	for {
		ws, next, err := s.ListWorkflows(ctx, catalog.ListWorkflowsParams{Page: catalog.Page{Limit: 3, Cursor: cursor}})
		require.NoError(t, err)
		require.LessOrEqual(t, len(ws), 3)
		got, cursor, pages = append(got, names(ws)...), next, pages+1
		if cursor == "" {
			break
		}
		require.Less(t, pages, 4, "pagination must end")
	}
	require.Equal(t, want, got, "ordered by name, deleted left out")
	require.Equal(t, 3, pages)

	all, next, err := s.ListWorkflows(ctx, catalog.ListWorkflowsParams{})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Equal(t, want, names(all))
}

func testCatalogVersion(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	last, err := s.CatalogVersion(ctx)
	require.NoError(t, err)
	moved := func(what string) {
		t.Helper()
		v, err := s.CatalogVersion(ctx)
		require.NoError(t, err)
		require.Greater(t, v, last, "catalog version must move on %s", what)
		last = v
	}
	w := create(t, s, "cv")
	moved("create")
	_, err = s.UpdateDraft(ctx, w.ID, &catalog.Workflow{Name: "cv", Definition: definition("cv", 2)}, 0, base)
	require.NoError(t, err)
	moved("update")
	_, _, err = s.Publish(ctx, w.ID, "h1", publisher, base)
	require.NoError(t, err)
	moved("publish")
	_, err = s.Unpublish(ctx, w.ID, base)
	require.NoError(t, err)
	moved("unpublish")
	require.NoError(t, s.DeleteWorkflow(ctx, w.ID, base))
	moved("delete")
}

func testConnections(t *testing.T, s catalog.Store) {
	ctx := context.Background()
	mk := func(name string) *catalog.Connection {
		return &catalog.Connection{ID: "c-" + name, Name: name, Type: "header", Header: "X-Key",
			Username: "u", Sealed: []byte{0, 1, 2, 255}, Hosts: []string{"api." + name + ".example", "*.example.org:8443"}, CreatedAt: base}
	}
	for _, name := range []string{"zeta", "alpha", "mid"} {
		require.NoError(t, s.CreateConnection(ctx, mk(name)))
	}
	dup := mk("alpha")
	dup.ID = "c-other"
	require.ErrorIs(t, s.CreateConnection(ctx, dup), catalog.ErrConflict)

	want := mk("alpha")
	for _, key := range []string{"c-alpha", "alpha"} {
		got, err := s.GetConnection(ctx, key)
		require.NoError(t, err)
		requireTime(t, want.CreatedAt, got.CreatedAt)
		got.CreatedAt = want.CreatedAt
		require.Equal(t, want, got)
	}
	_, err := s.GetConnection(ctx, "nope")
	require.ErrorIs(t, err, catalog.ErrNotFound)

	cs, err := s.ListConnections(ctx)
	require.NoError(t, err)
	require.Len(t, cs, 3)
	require.Equal(t, []string{"alpha", "mid", "zeta"}, []string{cs[0].Name, cs[1].Name, cs[2].Name})

	require.NoError(t, s.DeleteConnection(ctx, "c-mid"))
	require.ErrorIs(t, s.DeleteConnection(ctx, "c-mid"), catalog.ErrNotFound)
	_, err = s.GetConnection(ctx, "mid")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.NoError(t, s.CreateConnection(ctx, mk("mid")), "a deleted name is free again")

	hostless := mk("hostless")
	hostless.Hosts = nil
	require.NoError(t, s.CreateConnection(ctx, hostless))
	got, err := s.GetConnection(ctx, "hostless")
	require.NoError(t, err)
	require.Equal(t, []string{}, got.Hosts, "no hosts reads back as an empty list, never null")
}
