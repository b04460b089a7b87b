package catalogtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/internal/leaktest"
)

// webhookDoc is a workflow definition for the webhook tests.
const webhookDoc = `{"name":"hooked","input":{"type":"object"},"steps":[{"id":"hello","set":"hi"}]}`

// SealedWebhooks attacks a backend's webhook tokens at rest: raw reads everything the
// store s holds (its rows, or its keys' fields and members) as one byte string, as a thief
// holding a copy of the store would, and no webhook token may be in it in any encoding,
// yet every token still finds its workflow and shows in its address.
func SealedWebhooks(t *testing.T, s catalog.Store, raw func(t *testing.T) []byte) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{5}, 32)
	cat, err := catalog.New(s, &catalog.Config{SecretKey: key})
	require.NoError(t, err)

	wf, err := cat.Create(ctx, []byte(webhookDoc))
	require.NoError(t, err)
	token, err := cat.WebhookToken(wf)
	require.NoError(t, err)
	RequireNoToken(t, raw(t), token)
	found, err := cat.GetByWebhook(ctx, token)
	require.NoError(t, err)
	require.Equal(t, wf.ID, found.ID)

	restarted, err := catalog.New(s, &catalog.Config{SecretKey: key})
	require.NoError(t, err)
	again, err := restarted.Get(ctx, wf.ID)
	require.NoError(t, err)
	shown, err := restarted.WebhookToken(again)
	require.NoError(t, err)
	require.Equal(t, token, shown, "the same address after a restart")

	other, err := catalog.New(s, &catalog.Config{SecretKey: bytes.Repeat([]byte{6}, 32)})
	require.NoError(t, err)
	_, err = other.GetByWebhook(ctx, token)
	require.ErrorIs(t, err, catalog.ErrNotFound, "the digest is keyed")
	_, err = other.WebhookToken(again)
	require.Error(t, err, "the token opens only under its key")

	forged, err := catalog.NewWebhookToken()
	require.NoError(t, err)
	for _, bad := range []string{wf.WebhookDigest, forged, token + "x", strings.TrimPrefix(token, "wh_"), ""} {
		_, err = cat.GetByWebhook(ctx, bad)
		require.ErrorIs(t, err, catalog.ErrNotFound, "%q is no token", bad)
	}

	rotated, err := cat.RotateWebhook(ctx, wf.ID)
	require.NoError(t, err)
	_, err = cat.GetByWebhook(ctx, token)
	require.ErrorIs(t, err, catalog.ErrNotFound, "the old token stops at once")
	found, err = cat.GetByWebhook(ctx, rotated)
	require.NoError(t, err)
	shown, err = cat.WebhookToken(found)
	require.NoError(t, err)
	require.Equal(t, rotated, shown)
	RequireNoToken(t, raw(t), rotated)

	legacy := sealedLegacy(t, cat, s, raw)
	_, err = cat.GetByWebhook(ctx, found.WebhookDigest)
	require.ErrorIs(t, err, catalog.ErrNotFound, "another workflow's digest is no token")
	_, err = cat.GetByWebhook(ctx, legacy.WebhookDigest)
	require.ErrorIs(t, err, catalog.ErrNotFound, "an upgraded workflow's digest is no token")
}

// sealedLegacy stores a workflow as a GoRunner before sealed webhooks did (its plaintext
// token in the indexed field, nothing sealed), checks that its webhook works as it was and
// that SealWebhooks takes the token out of the store without changing its address, rev or
// updatedAt. It returns the upgraded workflow.
func sealedLegacy(t *testing.T, cat *catalog.Service, s catalog.Store, raw func(t *testing.T) []byte) *catalog.Workflow {
	ctx := context.Background()
	plain, err := catalog.NewWebhookToken()
	require.NoError(t, err)
	old := newWorkflow("legacy")
	old.WebhookDigest, old.WebhookSealed = plain, nil
	require.NoError(t, s.CreateWorkflow(ctx, old))
	require.Contains(t, string(raw(t)), plain, "written the old way, the token is in the store: raw reads it")

	found, err := cat.GetByWebhook(ctx, plain)
	require.NoError(t, err, "a workflow not upgraded yet answers at its old address")
	require.Equal(t, old.ID, found.ID)
	shown, err := cat.WebhookToken(found)
	require.NoError(t, err)
	require.Equal(t, plain, shown)

	n, err := cat.SealWebhooks(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	RequireNoToken(t, raw(t), plain)
	n, err = cat.SealWebhooks(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to upgrade")

	up, err := cat.GetByWebhook(ctx, plain)
	require.NoError(t, err, "the old address still works")
	require.Equal(t, old.ID, up.ID)
	require.Equal(t, old.Rev, up.Rev)
	requireTime(t, old.UpdatedAt, up.UpdatedAt)
	shown, err = cat.WebhookToken(up)
	require.NoError(t, err)
	require.Equal(t, plain, shown, "the same address")
	return up
}

// RequireNoToken fails unless the webhook token is absent from raw in every encoding: as
// given, without its wh_ prefix, and its random bytes (leaktest.RequireAbsent).
func RequireNoToken(t *testing.T, raw []byte, token string) {
	t.Helper()
	body := strings.TrimPrefix(token, "wh_")
	secret, err := base64.RawURLEncoding.DecodeString(body)
	require.NoError(t, err)
	leaktest.RequireAbsent(t, raw, []byte(token), []byte(body), secret)
	require.NotEmpty(t, raw, "raw read nothing")
}
