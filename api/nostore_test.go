package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecretAnswersAreNotStored reads, over real HTTP, every answer that carries a secret:
// a new token's secret, a rotated webhook token (also replayed under its Idempotency-Key)
// and each workflow view, whose webhookUrl holds the webhook token. A browser, proxy or
// CDN that kept one would hand the secret to the next person at that machine or cache;
// each answer says no-store.
func TestSecretAnswersAreNotStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create("kept")
	e.do("POST", "/api/workflows/kept/publish", nil)
	tests := []struct {
		name, method, path string
		body               any
		header             []string
		secret             string // what in the answer is secret
	}{
		{"create token", "POST", "/api/tokens", map[string]any{"name": "ci"}, nil, `"token"`},
		{"rotate webhook", "POST", "/api/workflows/kept/webhook/rotate", nil, []string{"Idempotency-Key", "rot-1"}, `"token"`},
		{"rotate webhook, replayed", "POST", "/api/workflows/kept/webhook/rotate", nil, []string{"Idempotency-Key", "rot-1"}, `"token"`},
		{"create workflow", "POST", "/api/workflows", greetDef("created"), nil, "webhookUrl"},
		{"import workflow", "POST", "/api/workflows/import", greetDef("imported"), nil, "webhookUrl"},
		{"use template", "POST", "/api/templates/greet/use", map[string]any{"name": "from-template"}, nil, "webhookUrl"},
		{"get workflow", "GET", "/api/workflows/kept", nil, nil, "webhookUrl"},
		{"list workflows", "GET", "/api/workflows", nil, nil, "webhookUrl"},
		{"update workflow", "PUT", "/api/workflows/kept", greetDef("kept"), nil, "webhookUrl"},
		{"duplicate workflow", "POST", "/api/workflows/kept/duplicate", map[string]any{"name": "copy"}, nil, "webhookUrl"},
		{"unpublish workflow", "POST", "/api/workflows/kept/unpublish", nil, nil, "webhookUrl"},
	}
	for _, tc := range tests { // in order: the replay follows its first answer
		t.Run(tc.name, func(t *testing.T) {
			a := e.do(tc.method, tc.path, tc.body, tc.header...)
			require.Less(t, a.Status, 300, string(a.Raw))
			require.Contains(t, string(a.Raw), tc.secret)
			require.Equal(t, "no-store", a.Header.Get("Cache-Control"))
			require.Equal(t, "no-cache", a.Header.Get("Pragma"))
		})
	}
	require.Equal(t, "true", e.do("POST", "/api/workflows/kept/webhook/rotate", nil, "Idempotency-Key", "rot-1").Header.Get("Idempotency-Replayed"))
	a := e.doAs("wrong", "GET", "/api/workflows", nil)
	require.Equal(t, http.StatusUnauthorized, a.Status)
	require.Equal(t, "no-store", a.Header.Get("Cache-Control"), "errors too")
}

// TestUnroutedAnswersAreNotStored: a 404 or 405 never reaches the table's middleware, yet
// a 405 on a webhook address repeats its token, so these answers say no-store too.
func TestUnroutedAnswersAreNotStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/no-such-thing", http.StatusNotFound},
		{"GET", "/webhooks/wh_secret-token", http.StatusMethodNotAllowed},
		{"DELETE", "/api/tokens", http.StatusMethodNotAllowed},
	} {
		a := e.do(tc.method, tc.path, nil)
		require.Equal(t, tc.status, a.Status, tc.path)
		require.Equal(t, "no-store", a.Header.Get("Cache-Control"), tc.path)
		require.Equal(t, "no-cache", a.Header.Get("Pragma"), tc.path)
	}
}
