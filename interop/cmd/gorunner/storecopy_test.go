package main_test

import (
	"io"
	"net/http"
	neturl "net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/store/pgstore/pgtest"
)

// rawCall is call answering the status, the headers and the body as sent.
func rawCall(t *testing.T, token, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, string(raw)
}

// TestStoreCopyServesAsBefore: a store copied from SQLite or Redis to PostgreSQL, or from
// SQLite to Redis, served with the same data directory (its secret.key), answers an old
// idempotency key with the kept answer, the old webhook address, an old token and the old
// run exactly as before; a second copy into it is refused.
func TestStoreCopyServesAsBefore(t *testing.T) {
	t.Parallel()
	sqlite := func(dir string) string { return "sqlite:" + filepath.Join(dir, "gorunner.db") }
	for _, tc := range []struct {
		name         string
		source, into func(t *testing.T, dir string) string
	}{
		{"SQLiteToPostgres", func(_ *testing.T, dir string) string { return sqlite(dir) }, postgresStore},
		{"RedisToPostgres", func(t *testing.T, _ string) string { return redisStore(t) }, postgresStore},
		{"SQLiteToRedis", func(_ *testing.T, dir string) string { return sqlite(dir) }, func(t *testing.T, _ string) string { return redisStore(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyServesAsBefore(t, dir, tc.source(t, dir), tc.into(t, dir))
		})
	}
}

// postgresStore is a --store URL on a fresh Postgres schema.
func postgresStore(t *testing.T, _ string) string { return pgtest.StoreURL(t) }

// copyServesAsBefore serves source over dir, copies it into target and serves that.
func copyServesAsBefore(t *testing.T, dir, source, target string) {
	s := startServe(t, dir, "--store", source)
	admin := s.adminToken(t)
	def := `{"name": "hooked", "input": {"type": "object"}, "steps": [{"id": "s", "set": "hi"}]}`
	status, body := call(t, admin, "POST", s.url+"/api/workflows", def, "Content-Type", "application/json")
	require.Equal(t, 201, status, body)
	status, body = call(t, admin, "POST", s.url+"/api/workflows/hooked/publish", "")
	require.Equal(t, 201, status, body)
	status, body = call(t, admin, "GET", s.url+"/api/workflows/hooked", "")
	require.Equal(t, 200, status, body)
	webhook, err := neturl.Parse(body["data"].(map[string]any)["webhookUrl"].(string))
	require.NoError(t, err)
	token, _, code := cli(t, s, "token", "create", "reader", "--scope", "runs:read", "--store", source)
	require.Equal(t, 0, code)
	token = strings.TrimSpace(token)

	run := func(s *server) (int, http.Header, string) {
		return rawCall(t, admin, "POST", s.url+"/api/workflows/hooked/run", `{"input": {"n": 1}}`,
			"Content-Type", "application/json", "Idempotency-Key", "order-7")
	}
	firstStatus, _, firstBody := run(s)
	require.Less(t, firstStatus, 300, firstBody)
	_, answer := call(t, admin, "POST", s.url+"/api/workflows/hooked/run?wait=5s", `{"input": {}}`, "Content-Type", "application/json")
	runID := answer["data"].(map[string]any)["id"].(string)
	_, _, oldRun := rawCall(t, token, "GET", s.url+"/api/runs/"+runID, "")
	s.stop()

	stdout, stderr, code := cli(t, s, "store", "copy", "--from", source, "--to", target)
	require.Equal(t, 0, code, stderr)
	total := strings.TrimSuffix(strings.TrimPrefix(stdout, "copied "), " records\n")
	require.Contains(t, stderr, "copied "+total+" of "+total+" records (run_steps)\n", "piped, the progress is plain lines")

	s = startServe(t, dir, "--store", target)
	status, header, replay := run(s)
	require.Equal(t, firstStatus, status)
	require.Equal(t, "true", header.Get("Idempotency-Replayed"))
	require.Equal(t, firstBody, replay, "the kept answer replays as it was")
	status, _, got := rawCall(t, token, "GET", s.url+"/api/runs/"+runID, "")
	require.Equal(t, 200, status, got)
	require.JSONEq(t, oldRun, got, "the old run, read with the old token, as before")
	status, body = call(t, "", "POST", s.url+webhook.Path, `{}`, "Content-Type", "application/json")
	require.Equal(t, 200, status, body)
	require.Equal(t, "completed", body["data"].(map[string]any)["status"])
	s.stop()

	_, stderr, code = cli(t, s, "store", "copy", "--from", source, "--to", target)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "the target store is not empty")
}
