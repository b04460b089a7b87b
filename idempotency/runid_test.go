package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
)

// unwrapping is a middleware's writer over keyed replay's, as http.ResponseController
// expects one to be.
type unwrapping struct{ http.ResponseWriter }

func (u unwrapping) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// TestSetRunID: the run a handler names with SetRunID, through any writers that unwrap to
// keyed replay's, is kept in the key's record, also when the body is too big to keep;
// nothing is read from the body. Without a key, SetRunID does nothing.
func TestSetRunID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, func(c *idempotency.Config) { c.MaxBody = 100 })
	scopeOf := func(*http.Request) (string, idempotency.Policy, bool) { return "p:a", idempotency.Policy{}, true }
	onError := func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
	tests := []struct {
		key, body, runID string
		wrap             bool
	}{
		{key: "named", body: `{"data":{"id":"other","workflowId":"w1"}}`, runID: "r1"},
		{key: "wrapped", body: `{}`, runID: "r2", wrap: true},
		{key: "big", body: `{"data":"` + strings.Repeat("x", 200) + `"}`, runID: "r3"},
		{key: "unnamed", body: `{"data":{"id":"r4","workflowId":"w1"}}`},
	}
	for _, tc := range tests {
		mw := h.svc.Middleware(scopeOf, onError)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if tc.wrap {
				w = unwrapping{w}
			}
			if tc.runID != "" {
				idempotency.SetRunID(w, tc.runID)
			}
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(tc.body))
		}))
		req := httptest.NewRequest(http.MethodPost, "/api/runs/x/rerun", strings.NewReader(`{}`))
		req.Header.Set(idempotency.HeaderKey, tc.key)
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, req)
		require.Equal(t, http.StatusAccepted, rec.Code, tc.key)
		kept, err := h.svc.Key(context.Background(), "p:a", tc.key)
		require.NoError(t, err, tc.key)
		require.Equal(t, tc.runID, kept.RunID, tc.key)
	}
	plain := httptest.NewRecorder()
	idempotency.SetRunID(plain, "r5")
	require.Empty(t, plain.Header(), "a writer of no keyed replay is left alone")
}
