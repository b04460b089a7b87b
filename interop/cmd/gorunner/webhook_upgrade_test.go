package main_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebhookPlaintextUpgradedAtStart: a workflow whose webhook token the file holds in
// the clear, as a GoRunner before sealed webhooks wrote it, is upgraded when serve starts:
// the token leaves the file, and the workflow answers at the same address.
func TestWebhookPlaintextUpgradedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir)
	token := s.adminToken(t)
	def := `{"name": "hooked", "input": {"type": "object"}, "steps": [{"id": "s", "set": "hi"}]}`
	status, body := call(t, token, "POST", s.url+"/api/workflows", def, "Content-Type", "application/json")
	require.Equal(t, 201, status, body)
	status, body = call(t, token, "POST", s.url+"/api/workflows/hooked/publish", "")
	require.Equal(t, 201, status, body)
	s.stop()

	const plain = "wh_a-plaintext-token-written-by-gorunner-before-sealing"
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "gorunner.db"))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`UPDATE workflows SET webhook_token = ?, webhook_sealed = x'' WHERE name = 'hooked'`, plain)
	require.NoError(t, err)

	s = startServe(t, dir)
	defer s.stop()
	var digest string
	var sealed []byte
	require.NoError(t, db.QueryRow(`SELECT webhook_token, webhook_sealed FROM workflows WHERE name = 'hooked'`).Scan(&digest, &sealed))
	require.NotEqual(t, plain, digest, "the start took the token out of the file")
	require.NotContains(t, string(sealed), plain)
	require.NotEmpty(t, sealed)

	status, body = call(t, token, "GET", s.url+"/api/workflows/hooked", "")
	require.Equal(t, 200, status, body)
	url := body["data"].(map[string]any)["webhookUrl"].(string)
	require.True(t, strings.HasSuffix(url, "/webhooks/"+plain), url)
	status, body = call(t, "", "POST", url, `{}`, "Content-Type", "application/json")
	require.Equal(t, 200, status, body)
	require.Equal(t, "completed", body["data"].(map[string]any)["status"])
}
