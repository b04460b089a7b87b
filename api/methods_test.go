package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/problem"
)

// A known path with a method it does not serve is a 405 METHOD_NOT_ALLOWED whose Allow
// header lists the path's methods (RFC 9110 §15.5.6), with or without a token; an
// unknown path stays a 404 NOT_FOUND.
func TestWrongMethod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		method, path, token string
		allow               string
	}{
		{"DELETE", "/api/workflows", e.token, "GET, POST"},
		{"PATCH", "/api/workflows/greet", e.token, "GET, PUT, DELETE"},
		{"GET", "/api/workflows/greet/publish", e.token, "POST"},
		{"PUT", "/api/runs/0190d5a0-0000-7000-8000-000000000000/cancel", e.token, "POST"},
		{"POST", "/api/tokens/abc", e.token, "DELETE"},
		{"GET", "/webhooks/whk_x", "", "POST"},
		{"POST", "/healthz", "", "GET"},
		{"DELETE", "/api/openapi.json", "", "GET"},
		{"POST", "/api/runs", "", "GET"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			a := e.doAs(c.token, c.method, c.path, nil)
			require.Equal(t, http.StatusMethodNotAllowed, a.Status, string(a.Raw))
			require.Equal(t, problem.CodeMethodNotAllowed, a.errorCode())
			require.Equal(t, c.allow, a.Header.Get("Allow"))
		})
	}
	t.Run("unknown path", func(t *testing.T) {
		a := e.do("GET", "/api/nothing-here", nil)
		require.Equal(t, http.StatusNotFound, a.Status)
		require.Equal(t, "NOT_FOUND", a.errorCode())
		require.Empty(t, a.Header.Get("Allow"))
	})
}
