package api_test

import (
	"database/sql"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog/catalogtest"
	"github.com/gorunner/gorunner/internal/leaktest"
)

// TestKeptAnswersSealedAtRest performs the attack on keyed replay: one who copied the SQLite
// file reads every row of it after each route whose answer carries a webhook token was
// called with an Idempotency-Key, and finds none of the tokens in any encoding; each
// replay still answers byte for byte what was first answered, token included. A run's kept
// answer holds no secret and stays stored in the clear, as it was.
func TestKeptAnswersSealedAtRest(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gorunner.db")
	e := newEnvAt(t, path)
	e.published("kept")
	tests := []struct {
		name, path string
		body       any
		token      func(*testing.T, answer) string
	}{
		{"create", "/api/workflows", greetDef("created"), webhookURLToken},
		{"import", "/api/workflows/import", greetDef("imported"), webhookURLToken},
		{"duplicate", "/api/workflows/kept/duplicate", map[string]any{"name": "copy"}, webhookURLToken},
		{"use template", "/api/templates/greet/use", map[string]any{"name": "from-template"}, webhookURLToken},
		{"rotate", "/api/workflows/kept/webhook/rotate", nil, func(_ *testing.T, a answer) string { return a.data()["token"].(string) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first := e.do("POST", tc.path, tc.body, "Idempotency-Key", "seal-"+tc.name)
			require.Equal(t, http.StatusCreated, first.Status, string(first.Raw))
			token := tc.token(t, first)
			require.Contains(t, string(first.Raw), token)
			catalogtest.RequireNoToken(t, leaktest.SQLiteRows(t, path), token)

			replay := e.do("POST", tc.path, tc.body, "Idempotency-Key", "seal-"+tc.name)
			require.Equal(t, "true", replay.Header.Get("Idempotency-Replayed"))
			require.Equal(t, first.Status, replay.Status)
			require.Equal(t, string(first.Raw), string(replay.Raw), "the replay answers byte for byte")
			require.Equal(t, first.Header.Get("Location"), replay.Header.Get("Location"))

			shown := e.do("GET", "/api/idempotency-keys/"+url.PathEscape("seal-"+tc.name), nil)
			require.Equal(t, http.StatusOK, shown.Status, string(shown.Raw))
			require.Equal(t, "kept", shown.data()["state"])
			require.NotContains(t, string(shown.Raw), token)
		})
	}

	run := e.do("POST", "/api/workflows/kept/run", map[string]any{"name": "Ada"}, "Idempotency-Key", "seal-run")
	require.Equal(t, http.StatusAccepted, run.Status, string(run.Raw))
	require.Equal(t, string(run.Raw), string(keptBody(t, path, "seal-run")), "a run's answer is kept as it was")
}

// webhookURLToken reads the webhook token out of a workflow answer's webhookUrl.
func webhookURLToken(t *testing.T, a answer) string {
	t.Helper()
	return tokenOf(t, a.data()["webhookUrl"].(string))
}

// keptBody is the body kept in the SQLite file at path for the key.
func keptBody(t *testing.T, path, key string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	var body []byte
	require.NoError(t, db.QueryRow(`SELECT body FROM idempotency_keys WHERE key = ?`, key).Scan(&body))
	return body
}
