package catalog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// TestWebhooksWithoutSecretKey: a catalog given no secret key seals webhook tokens under
// a random key of its own. Its webhooks work, and no other keyless catalog over the same
// store can find or show them, so a token is never stored under a key anyone can know.
func TestWebhooksWithoutSecretKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "gorunner.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	c, err := catalog.New(st, nil)
	require.NoError(t, err)
	wf, err := c.Create(ctx, []byte(`{"name":"keyless","input":{"type":"object"},"steps":[{"id":"s","set":"hi"}]}`))
	require.NoError(t, err)
	token, err := c.WebhookToken(wf)
	require.NoError(t, err)
	require.NotEqual(t, token, wf.WebhookDigest)
	found, err := c.GetByWebhook(ctx, token)
	require.NoError(t, err)
	require.Equal(t, wf.ID, found.ID)

	other, err := catalog.New(st, nil)
	require.NoError(t, err)
	_, err = other.GetByWebhook(ctx, token)
	require.ErrorIs(t, err, catalog.ErrNotFound)
	_, err = other.WebhookToken(wf)
	require.Error(t, err)
}
