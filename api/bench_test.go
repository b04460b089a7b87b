package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkREST measures REST submit → completed (POST run, then GET ?wait=) beside a
// baseline from the same run: an authenticated GET round trip on the same server.
func BenchmarkREST(b *testing.B) {
	e := newEnv(b)
	client := e.srv.Client()
	send := func(method, path, body string) []byte {
		req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
		require.NoError(b, err)
		req.Header.Set("Authorization", "Bearer "+e.token)
		res, err := client.Do(req)
		require.NoError(b, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(b, err)
		require.Less(b, res.StatusCode, 300, string(raw))
		return raw
	}
	send("POST", "/api/workflows", `{"name":"bench","input":{"type":"object"},"steps":[{"id":"a","set":1},{"id":"b","set":2},{"id":"c","set":3}]}`)
	send("POST", "/api/workflows/bench/publish", "")
	b.Run("baseline_get_workflow", func(b *testing.B) {
		for b.Loop() {
			send("GET", "/api/workflows/bench", "")
		}
	})
	b.Run("submit_to_completed", func(b *testing.B) {
		for b.Loop() {
			raw := send("POST", "/api/workflows/bench/run", `{}`)
			id := string(raw[strings.Index(string(raw), `"id":"`)+6:][:36])
			done := send("GET", "/api/runs/"+id+"?wait=30s", "")
			require.Contains(b, string(done), `"status":"completed"`)
		}
	})
}
