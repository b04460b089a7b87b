package catalog_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// recorder keeps the workflow IDs a change hook was told about.
type recorder struct {
	mu  sync.Mutex
	ids []string
}

func (r *recorder) hook(_ context.Context, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

// TestChangeHooks: every write that changes a workflow tells the hooks before it returns,
// a failed write tells nothing, and an unregistered hook hears no more.
func TestChangeHooks(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "gorunner.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	c, err := catalog.New(st, nil)
	require.NoError(t, err)
	var r recorder
	unregister := c.OnChange(r.hook)

	def := `{"name":"hooked","input":{"type":"object"},"steps":[{"id":"s","set":1}]}`
	w, err := c.Create(ctx, []byte(def))
	require.NoError(t, err)
	_, err = c.Update(ctx, w.ID, []byte(`{"name":"hooked","input":{"type":"object"},"steps":[{"id":"s","set":2}]}`), 0)
	require.NoError(t, err)
	_, _, err = c.Publish(ctx, w.ID, auth.Local())
	require.NoError(t, err)
	_, err = c.Unpublish(ctx, w.ID)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, w.ID))
	require.Equal(t, []string{w.ID, w.ID, w.ID, w.ID, w.ID}, r.seen(), "create, update, publish, unpublish, delete")

	_, err = c.Create(ctx, []byte(`{"name":"broken"`))
	require.Error(t, err)
	_, _, err = c.Publish(ctx, "no-such-workflow", auth.Local())
	require.ErrorIs(t, err, catalog.ErrNotFound)
	require.Len(t, r.seen(), 5, "failed writes tell nothing")

	unregister()
	_, err = c.Create(ctx, []byte(def))
	require.NoError(t, err)
	require.Len(t, r.seen(), 5, "an unregistered hook hears no more")
}
