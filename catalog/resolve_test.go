package catalog_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// countingStore counts the reads Resolve would make without its cache.
type countingStore struct {
	catalog.Store
	reads atomic.Int64
}

func (c *countingStore) GetWorkflow(ctx context.Context, idOrName string) (*catalog.Workflow, error) {
	c.reads.Add(1)
	return c.Store.GetWorkflow(ctx, idOrName)
}

func (c *countingStore) GetVersion(ctx context.Context, id string, version int) (*catalog.Version, error) {
	c.reads.Add(1)
	return c.Store.GetVersion(ctx, id, version)
}

func resolveDef(step int) []byte {
	return []byte(`{"name":"cached","input":{"type":"object"},"steps":[{"id":"s","set":` + string(rune('0'+step)) + `}]}`)
}

// TestResolveKeepsAnswersWhileTheCatalogStands: a second admission of a workflow reads only
// the catalog version, and every write by another Service on the same file (another
// process) is seen by the very next Resolve: a new version, an unpublish, a delete.
func TestResolveKeepsAnswersWhileTheCatalogStands(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "gorunner.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	counted := &countingStore{Store: st}
	here, err := catalog.New(counted, nil)
	require.NoError(t, err)
	there, err := catalog.New(st, nil)
	require.NoError(t, err)

	w, err := there.Create(ctx, resolveDef(1))
	require.NoError(t, err)
	_, _, err = there.Publish(ctx, w.ID, auth.Local())
	require.NoError(t, err)

	for _, key := range []string{"cached", w.ID} {
		got, err := here.Resolve(ctx, key, runner.EnvProduction)
		require.NoError(t, err)
		require.Equal(t, 1, got.Version)
		reads := counted.reads.Load()
		again, err := here.Resolve(ctx, key, runner.EnvProduction)
		require.NoError(t, err)
		require.Equal(t, got, again)
		require.Equal(t, reads, counted.reads.Load(), "%s: the second Resolve reads no workflow", key)
		got.Definition[0], again.Definition[0] = 'X', 'X' // callers' copies: the kept answer does not change
		third, err := here.Resolve(ctx, key, runner.EnvProduction)
		require.NoError(t, err)
		require.JSONEq(t, string(resolveDef(1)), string(third.Definition))
	}

	_, err = there.Update(ctx, w.ID, resolveDef(2), 0)
	require.NoError(t, err)
	_, _, err = there.Publish(ctx, w.ID, auth.Local())
	require.NoError(t, err)
	got, err := here.Resolve(ctx, "cached", runner.EnvProduction)
	require.NoError(t, err)
	require.Equal(t, 2, got.Version, "a version published elsewhere is seen at once")
	require.JSONEq(t, string(resolveDef(2)), string(got.Definition))

	_, err = there.Unpublish(ctx, w.ID)
	require.NoError(t, err)
	_, err = here.Resolve(ctx, "cached", runner.EnvProduction)
	require.ErrorIs(t, err, runner.ErrNotPublished)

	require.NoError(t, there.Delete(ctx, w.ID))
	_, err = here.Resolve(ctx, w.ID, runner.EnvProduction)
	require.ErrorIs(t, err, runner.ErrWorkflowNotFound)
}
