package api_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
)

func TestIdempotencyKeysOfThePrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create("k-greet")
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/k-greet/publish", nil).Status)
	run := e.do("POST", "/api/workflows/k-greet/run", map[string]any{"name": "Ada"}, "Idempotency-Key", "order/1")
	require.Equal(t, http.StatusAccepted, run.Status, string(run.Raw))
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows", greetDef("k-other"), "Idempotency-Key", "create-1").Status)

	_, other, err := e.auth.Issue(context.Background(), auth.IssueParams{Name: "other", Scopes: auth.AdminScopes()})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, e.doAs(other, "POST", "/api/workflows/k-greet/run", map[string]any{"name": "Bob"}, "Idempotency-Key", "theirs").Status)

	list := e.do("GET", "/api/idempotency-keys", nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	keys := list.Body["data"].([]any)
	require.Len(t, keys, 2, "only the caller's keys")
	newest, first := keys[0].(map[string]any), keys[1].(map[string]any)
	require.Equal(t, "create-1", newest["key"])
	require.Equal(t, "order/1", first["key"])
	require.Equal(t, "kept", first["state"])
	require.Equal(t, "POST", first["method"])
	require.Equal(t, "/api/workflows/k-greet/run", first["path"])
	require.EqualValues(t, http.StatusAccepted, first["status"])
	require.Equal(t, run.data()["id"], first["runId"])
	require.NotEmpty(t, first["createdAt"])
	require.NotEmpty(t, first["expiresAt"])
	require.NotContains(t, string(list.Raw), "Bob", "no kept body is listed")
	require.NotContains(t, string(list.Raw), "theirs")

	page := e.do("GET", "/api/idempotency-keys?limit=1", nil)
	require.Len(t, page.Body["data"], 1)
	next := page.Body["nextCursor"].(string)
	page2 := e.do("GET", "/api/idempotency-keys?limit=1&cursor="+url.QueryEscape(next), nil)
	require.Equal(t, "order/1", page2.Body["data"].([]any)[0].(map[string]any)["key"])
	require.NotContains(t, page2.Body, "nextCursor")
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/api/idempotency-keys?cursor=nope", nil).Status)

	one := e.do("GET", "/api/idempotency-keys/"+url.PathEscape("order/1"), nil)
	require.Equal(t, http.StatusOK, one.Status, string(one.Raw))
	require.Equal(t, run.data()["id"], one.data()["runId"])
	require.NotContains(t, string(one.Raw), "Ada", "the key, not its kept body")
	a := e.do("GET", "/api/idempotency-keys/theirs", nil)
	require.Equal(t, http.StatusNotFound, a.Status, "another principal's key does not exist for the caller")
	require.Equal(t, http.StatusOK, e.doAs(other, "GET", "/api/idempotency-keys/theirs", nil).Status)
	require.Equal(t, http.StatusUnauthorized, e.doAs("", "GET", "/api/idempotency-keys", nil).Status)
}

// TestKeysNameResumedAndRerunRuns: a key sent with a hook resume or a rerun names the run
// the handler started or resumed (idempotency.SetRunID), read from no answer body.
func TestKeysNameResumedAndRerunRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(approveDef())
	id := e.startAs(e.token, "approve-req", map[string]any{"requestId": "k-1"})
	resume := e.do("POST", "/api/hooks/approve:k-1/resume", map[string]any{"approved": true}, "Idempotency-Key", "resume-1")
	require.Equal(t, http.StatusAccepted, resume.Status, string(resume.Raw))
	rerun := e.do("POST", "/api/runs/"+id+"/rerun", nil, "Idempotency-Key", "rerun-1")
	require.Equal(t, http.StatusAccepted, rerun.Status, string(rerun.Raw))
	for key, want := range map[string]any{"resume-1": id, "rerun-1": rerun.data()["id"]} {
		one := e.do("GET", "/api/idempotency-keys/"+key, nil)
		require.Equal(t, http.StatusOK, one.Status, string(one.Raw))
		require.Equal(t, want, one.data()["runId"], key)
	}
	require.NotEqual(t, id, rerun.data()["id"])
}
