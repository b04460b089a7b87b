package catalog_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// TestShorterRetention: the workflows whose definition sets a retention, over more than
// one page of workflows, and no others; an edit of the draft changes it.
func TestShorterRetention(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "gorunner.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	c, err := catalog.New(st, nil)
	require.NoError(t, err)
	doc := func(name, retention string) []byte {
		return []byte(`{"name":"` + name + `","input":{"type":"object"},"steps":[{"id":"a","set":1}]` + retention + `}`)
	}
	want := map[string]time.Duration{}
	for i := range 130 { // one past the first page of 100
		w, err := c.Create(ctx, doc(fmt.Sprintf("w%03d", i), ""))
		require.NoError(t, err)
		if i%50 == 0 {
			_, err = c.Update(ctx, w.ID, doc(w.Name, `,"retention":"`+fmt.Sprint(i+1)+`d"`), 0)
			require.NoError(t, err)
			want[w.ID] = time.Duration(i+1) * 24 * time.Hour
		}
	}
	got, err := c.ShorterRetention(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got)

	_, err = c.Create(ctx, doc("bad", `,"retention":"0"`))
	require.ErrorContains(t, err, "/retention", "refused at create, with a pointer")
}
