package api_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/catalog/catalogtest"
	"github.com/gorunner/gorunner/internal/leaktest"
)

// TestWebhookTokenSealedAtRest performs the attack: one who copied the SQLite file reads
// every row of it and finds no webhook token in any encoding, so cannot run any workflow;
// the server still shows the address and runs the workflow at it, across a restart.
func TestWebhookTokenSealedAtRest(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	e := newEnvAt(t, path)
	e.published("sealed")
	url := e.do("GET", "/api/workflows/sealed", nil).data()["webhookUrl"].(string)
	token := tokenOf(t, url)
	catalogtest.RequireNoToken(t, leaktest.SQLiteRows(t, path), token)
	requireRuns(t, e, url)

	rot := e.do("POST", "/api/workflows/sealed/webhook/rotate", nil)
	require.Equal(t, http.StatusCreated, rot.Status, string(rot.Raw))
	rotated := rot.data()["url"].(string)
	require.Equal(t, tokenOf(t, rotated), rot.data()["token"])
	require.Equal(t, http.StatusNotFound, e.doAs("", "POST", url[len(e.srv.URL):], map[string]any{"name": "Bob"}).Status,
		"the old address stops at once")
	requireRuns(t, e, rotated)
	require.Equal(t, rotated, e.do("GET", "/api/workflows/sealed", nil).data()["webhookUrl"])
	catalogtest.RequireNoToken(t, leaktest.SQLiteRows(t, path), tokenOf(t, rotated))

	e.stop()
	restarted := newEnvAt(t, path)
	shown := restarted.do("GET", "/api/workflows/sealed", nil).data()["webhookUrl"].(string)
	require.Equal(t, tokenOf(t, rotated), tokenOf(t, shown), "the same address")
	requireRuns(t, restarted, shown)
}

// TestWebhookLegacyTokenUpgraded: a workflow stored with its plaintext token, as a GoRunner
// before sealed webhooks wrote it, answers at its address before the upgrade and after it,
// when its token is gone from the file; its ETag stays.
func TestWebhookLegacyTokenUpgraded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	e := newEnvAt(t, path)
	e.published("other")
	plain, err := catalog.NewWebhookToken()
	require.NoError(t, err)
	def := `{"name":"legacy","input":{"type":"object"},"steps":[{"id":"s","set":"hi"}]}`
	require.NoError(t, e.store.CreateWorkflow(ctx, &catalog.Workflow{ID: "legacy-id", Name: "legacy", Rev: 1,
		Definition: []byte(def), WebhookDigest: plain, CreatedAt: time.Now(), UpdatedAt: time.Now()}))
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/legacy/publish", nil).Status)
	before := e.do("GET", "/api/workflows/legacy", nil)
	url := before.data()["webhookUrl"].(string)
	require.Equal(t, plain, tokenOf(t, url))
	requireRuns(t, e, url)

	n, err := e.catalog.SealWebhooks(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	catalogtest.RequireNoToken(t, leaktest.SQLiteRows(t, path), plain)
	after := e.do("GET", "/api/workflows/legacy", nil)
	require.Equal(t, url, after.data()["webhookUrl"], "the same address")
	require.Equal(t, before.Header.Get("ETag"), after.Header.Get("ETag"))
	requireRuns(t, e, url)

	other, err := e.store.GetWorkflow(ctx, "other")
	require.NoError(t, err)
	legacy, err := e.store.GetWorkflow(ctx, "legacy")
	require.NoError(t, err)
	forged, err := catalog.NewWebhookToken()
	require.NoError(t, err)
	for _, bad := range []string{other.WebhookDigest, legacy.WebhookDigest, forged, "wh_"} {
		a := e.doAs("", "POST", "/webhooks/"+bad, map[string]any{})
		require.Equal(t, http.StatusNotFound, a.Status, "%s: %s", bad, a.Raw)
	}
}

// tokenOf is the token in a webhook address.
func tokenOf(t *testing.T, url string) string {
	t.Helper()
	_, token, ok := strings.Cut(url, "/webhooks/")
	require.True(t, ok, url)
	return token
}

// requireRuns calls the webhook at url and requires its run to complete.
func requireRuns(t *testing.T, e *env, url string) {
	t.Helper()
	a := e.doAs("", "POST", url[len(e.srv.URL):], map[string]any{"name": "Bob"})
	require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
	require.Equal(t, "completed", a.data()["status"])
}
