package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/testclock"
)

// mint creates a token with scopes as the admin and returns its secret.
func (e *env) mint(name string, scopes ...string) string {
	e.t.Helper()
	a := e.do("POST", "/api/tokens", map[string]any{"name": name, "scopes": scopes})
	require.Equal(e.t, http.StatusCreated, a.Status, string(a.Raw))
	return a.data()["token"].(string)
}

// publish creates and publishes a workflow from def.
func (e *env) publish(def map[string]any) {
	e.t.Helper()
	a := e.do("POST", "/api/workflows", def)
	require.Equal(e.t, http.StatusCreated, a.Status, string(a.Raw))
	a = e.do("POST", "/api/workflows/"+def["name"].(string)+"/publish", nil)
	require.Equal(e.t, http.StatusCreated, a.Status, string(a.Raw))
}

// startAs starts a run of workflow with token and returns the run ID.
func (e *env) startAs(token, workflow string, input any) string {
	e.t.Helper()
	a := e.doAs(token, "POST", "/api/workflows/"+workflow+"/run", input)
	require.Equal(e.t, http.StatusAccepted, a.Status, string(a.Raw))
	return a.data()["id"].(string)
}

func waitDef() map[string]any {
	return map[string]any{
		"name":  "wait",
		"input": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}},
		"steps": []any{
			map[string]any{"id": "confirm", "hook": map[string]any{"token": "order:${{ input.id }}", "timeout": "1h"}},
			map[string]any{"id": "ship", "hook": map[string]any{"token": "order:${{ input.id }}", "timeout": "1h"}},
		},
	}
}

// scopeFixture has three published workflows — greet, charge (tag billing) and wait (a
// hook) — a finished admin run of greet, an admin run of wait waiting on hook order:1, and
// one token per scope set. The run waits on its hook twice, so two allowed resumes land.
type scopeFixture struct {
	*env
	greetRun string
	waitRun  string // waits on hook order:1
	tokens   map[string]string
}

func newScopeFixture(t *testing.T) *scopeFixture {
	e := newEnv(t)
	charge := greetDef("charge")
	charge["tags"] = []any{"billing"}
	for _, def := range []map[string]any{greetDef("greet"), charge, waitDef()} {
		e.publish(def)
	}
	f := &scopeFixture{env: e, tokens: map[string]string{"admin": e.token}}
	f.greetRun = e.startAs(e.token, "greet", map[string]any{"name": "Ada"})
	require.Equal(t, http.StatusOK, e.do("GET", "/api/runs/"+f.greetRun+"?wait=10s", nil).Status)
	f.waitRun = e.startAs(e.token, "wait", map[string]any{"id": "1"})
	require.Eventually(t, func() bool { return e.do("GET", "/api/hooks/order:1", nil).Status == http.StatusOK },
		10*time.Second, 10*time.Millisecond)
	for _, s := range []string{"workflows:write", "runs:write", "runs:read", "runs:write:tag=billing", "runs:read:workflow=greet"} {
		f.tokens[s] = e.mint(s, s)
	}
	return f
}

// TestRouteScopes is the route × scope table of SPEC §9: every authenticated route, called
// with a token of each scope set, answers 403 FORBIDDEN exactly when the scope is missing.
func TestRouteScopes(t *testing.T) {
	t.Parallel()
	f := newScopeFixture(t)
	const (
		A  = "admin"
		WW = "workflows:write"
		RW = "runs:write"
		RR = "runs:read"
		BW = "runs:write:tag=billing"
		GR = "runs:read:workflow=greet"
	)
	all := []string{A, WW, RW, RR, BW, GR}
	type row struct {
		method, path string
		body         any
		ok           int      // the status when allowed
		allowed      []string // the scope sets allowed
	}
	run := "/api/runs/" + f.greetRun
	rows := []row{
		{"POST", "/api/workflows", map[string]any{}, 400, []string{A, WW}},
		{"POST", "/api/workflows/import", "{}", 400, []string{A, WW}},
		{"GET", "/api/workflows", nil, 200, []string{A, RR, GR}},
		{"GET", "/api/workflows/greet", nil, 200, []string{A, RR, GR}},
		{"GET", "/api/workflows/charge", nil, 200, []string{A, RR}},
		{"GET", "/api/workflows/greet/export", nil, 200, []string{A, RR, GR}},
		{"PUT", "/api/workflows/nope", map[string]any{}, 404, []string{A, WW}},
		{"DELETE", "/api/workflows/nope", nil, 404, []string{A, WW}},
		{"POST", "/api/workflows/nope/duplicate", nil, 404, []string{A, WW}},
		{"POST", "/api/workflows/nope/publish", nil, 404, []string{A, WW}},
		{"POST", "/api/workflows/nope/unpublish", nil, 404, []string{A, WW}},
		{"GET", "/api/workflows/greet/versions", nil, 200, []string{A, RR, GR}},
		{"GET", "/api/workflows/greet/schedules", nil, 200, []string{A, RR, GR}},
		{"POST", "/api/workflows/nope/webhook/rotate", nil, 404, []string{A, WW}},
		{"POST", "/api/workflows/charge/run", map[string]any{"name": "x"}, 202, []string{A, RW, BW}},
		{"POST", "/api/workflows/greet/run", map[string]any{"name": "x"}, 202, []string{A, RW}},
		{"POST", "/api/workflows/greet/run?environment=test", map[string]any{"name": "x"}, 202, []string{A}},
		{"GET", "/api/runs", nil, 200, all},
		{"POST", "/api/runs/rerun", map[string]any{"runIds": []string{f.greetRun}}, 202, []string{A, RW}},
		{"GET", run, nil, 200, []string{A, RR, GR}},
		{"GET", run + "/events", nil, 200, []string{A, RR, GR}},
		{"GET", run + "/steps?parent=greet", nil, 200, []string{A, RR, GR}},
		{"POST", run + "/cancel", nil, 409, []string{A, RW}},
		{"DELETE", "/api/runs/" + f.waitRun, nil, 409, []string{A, RW}}, // active: not deleted
		{"POST", run + "/rerun", nil, 202, []string{A, RW}},
		{"GET", "/api/hooks/order:1", nil, 200, []string{A, RR}},
		{"POST", "/api/hooks/order:1/resume", map[string]any{"ok": true}, 202, []string{A, RW}},
		{"POST", "/api/connections", map[string]any{}, 400, []string{A, WW}},
		{"GET", "/api/connections", nil, 200, []string{A, WW}},
		{"DELETE", "/api/connections/nope", nil, 404, []string{A, WW}},
		{"GET", "/api/templates", nil, 200, []string{A, WW}},
		{"POST", "/api/templates/nope/use", nil, 404, []string{A, WW}},
		{"POST", "/api/tokens", map[string]any{"name": "x"}, 201, []string{A}},
		{"GET", "/api/tokens", nil, 200, []string{A}},
		{"DELETE", "/api/tokens/nope", nil, 404, []string{A}},
		{"GET", "/api/oauth/grants", nil, 404, all}, // OAuth off here: oauth tests cover them on
		{"DELETE", "/api/oauth/grants/nope", nil, 404, all},
		{"GET", "/api/idempotency-keys", nil, 200, all},
		{"GET", "/api/idempotency-keys/nope", nil, 404, all},
	}
	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.method+" "+strings.SplitN(r.path, "?", 2)[0]] = true
		// Refused calls first: an allowed one may change what the next sees (a resume ends
		// the waiting run).
		slices.SortStableFunc(all, func(a, b string) int { return cmpBool(contains(r.allowed, a), contains(r.allowed, b)) })
		for _, scope := range all {
			a := f.doAs(f.tokens[scope], r.method, r.path, r.body)
			if contains(r.allowed, scope) {
				require.Equal(t, r.ok, a.Status, "%s %s as %s: %s", r.method, r.path, scope, a.Raw)
				continue
			}
			require.Equal(t, http.StatusForbidden, a.Status, "%s %s as %s: %s", r.method, r.path, scope, a.Raw)
			require.Equal(t, "FORBIDDEN", a.errorCode())
			require.Contains(t, string(a.Raw), "lacks the scope", "the message names the missing scope")
		}
	}
	requireEveryRouteCovered(t, f.env, covered)
}

// requireEveryRouteCovered fails when the OpenAPI document (made from the route table)
// lists an authenticated operation that covered does not exercise.
func requireEveryRouteCovered(t *testing.T, e *env, covered map[string]bool) {
	var doc struct {
		Paths map[string]map[string]struct {
			Security *[]any `json:"security"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/openapi.json", nil).Raw, &doc))
	for path, ops := range doc.Paths {
		if strings.HasPrefix(path, "/webhooks/") {
			continue // public: a webhook carries its own token
		}
		for method := range ops {
			found := false
			for c := range covered {
				m, p, _ := strings.Cut(c, " ")
				found = found || (strings.EqualFold(m, method) && routeMatches(path, p))
			}
			require.True(t, found, "no scope row for %s %s", method, path)
		}
	}
}

// routeMatches reports whether the concrete path p fits the pattern (with its parameters).
func routeMatches(pattern, p string) bool {
	ps, cs := strings.Split(pattern, "/"), strings.Split(p, "/")
	if len(ps) != len(cs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != cs[i] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// TestNonAdminCannotTouchTokens performs the attack of issue 12: a fresh token listed and
// created tokens, then revoked the admin token.
func TestNonAdminCannotTouchTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	list := e.do("GET", "/api/tokens", nil)
	require.Equal(t, http.StatusOK, list.Status)
	adminID := list.Body["data"].([]any)[0].(map[string]any)["id"].(string)
	fresh := e.mint("agent", "runs:write", "runs:read", "workflows:write")

	require.Equal(t, http.StatusForbidden, e.doAs(fresh, "GET", "/api/tokens", nil).Status)
	a := e.doAs(fresh, "POST", "/api/tokens", map[string]any{"name": "mine", "scopes": []string{"admin"}})
	require.Equal(t, http.StatusForbidden, a.Status)
	require.Contains(t, string(a.Raw), "lacks the scope admin")
	require.Equal(t, http.StatusForbidden, e.doAs(fresh, "POST", "/api/tokens", map[string]any{"name": "same", "scopes": []string{"runs:read"}}).Status)
	require.Equal(t, http.StatusForbidden, e.doAs(fresh, "DELETE", "/api/tokens/"+adminID, nil).Status)

	require.Equal(t, http.StatusOK, e.do("GET", "/api/tokens", nil).Status, "the admin keeps access")
	require.Len(t, e.do("GET", "/api/tokens", nil).Body["data"], 2, "no token was created")
}

// TestRunsBelongToTheirStarter: a token reads its own runs, not another principal's (whose
// outputs may hold secrets), and lists only what it may read.
func TestRunsBelongToTheirStarter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(greetDef("greet"))
	alice, bob := e.mint("alice", "runs:write"), e.mint("bob", "runs:write")
	aliceRun := e.startAs(alice, "greet", map[string]any{"name": "Alice"})
	bobRun := e.startAs(bob, "greet", map[string]any{"name": "Bob"})

	require.Equal(t, http.StatusOK, e.doAs(alice, "GET", "/api/runs/"+aliceRun+"?wait=10s", nil).Status)
	a := e.doAs(bob, "GET", "/api/runs/"+aliceRun, nil)
	require.Equal(t, http.StatusForbidden, a.Status)
	require.Contains(t, string(a.Raw), "runs:read:workflow=greet")

	ids := func(token string) []string {
		a := e.doAs(token, "GET", "/api/runs", nil)
		require.Equal(t, http.StatusOK, a.Status)
		var out []string
		for _, r := range a.Body["data"].([]any) {
			out = append(out, r.(map[string]any)["id"].(string))
		}
		return out
	}
	require.Equal(t, []string{aliceRun}, ids(alice))
	require.Equal(t, []string{bobRun}, ids(bob))
	require.ElementsMatch(t, []string{aliceRun, bobRun}, ids(e.token))
	reader := e.mint("reader", "runs:read:workflow=greet")
	require.ElementsMatch(t, []string{aliceRun, bobRun}, ids(reader), "runs:read on the workflow reads every run of it")
	require.Equal(t, http.StatusOK, e.doAs(reader, "GET", "/api/runs/"+bobRun, nil).Status)
}

// TestHooksAndCancelNeedRunsWrite: resuming another principal's hook or cancelling its run
// needs runs:write on the run's workflow.
func TestHooksAndCancelNeedRunsWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.publish(waitDef())
	owner := e.mint("owner", "runs:write:workflow=wait")
	run := e.startAs(owner, "wait", map[string]any{"id": "7"})
	require.Eventually(t, func() bool { return e.do("GET", "/api/hooks/order:7", nil).Status == http.StatusOK },
		10*time.Second, 10*time.Millisecond)

	for _, scopes := range [][]string{{"runs:read"}, {"runs:write:workflow=greet"}, {"runs:write:tag=billing"}, {"workflows:write"}} {
		other := e.mint("other", scopes...)
		a := e.doAs(other, "POST", "/api/hooks/order:7/resume", map[string]any{"approved": true})
		require.Equal(t, http.StatusForbidden, a.Status, "%v: %s", scopes, a.Raw)
		require.Contains(t, string(a.Raw), "runs:write:workflow=wait")
		require.Equal(t, http.StatusForbidden, e.doAs(other, "POST", "/api/runs/"+run+"/cancel", nil).Status, "%v", scopes)
	}
	require.Equal(t, "waiting", e.do("GET", "/api/runs/"+run, nil).data()["status"], "nothing reached the run")
	require.Equal(t, http.StatusOK, e.doAs(owner, "POST", "/api/runs/"+run+"/cancel", nil).Status)
}

// TestDraftsNeedWorkflowsWrite: running a draft (environment=test) needs workflows:write
// on top of runs:write.
func TestDraftsNeedWorkflowsWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create("draft")
	runner := e.mint("runner", "runs:write")
	a := e.doAs(runner, "POST", "/api/workflows/draft/run?environment=test", map[string]any{"name": "x"})
	require.Equal(t, http.StatusForbidden, a.Status)
	require.Contains(t, string(a.Raw), "lacks the scope workflows:write")
	author := e.mint("author", "runs:write", "workflows:write")
	require.Equal(t, http.StatusAccepted, e.doAs(author, "POST", "/api/workflows/draft/run?environment=test", map[string]any{"name": "x"}).Status)
}

func TestTokenExpiryAndValidation(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now())
	e := newEnvConfig(t, envConfig{now: clock.Now})
	a := e.do("POST", "/api/tokens", map[string]any{"name": "brief", "scopes": []string{"runs:read"}, "expiresIn": "300ms"})
	require.Equal(t, http.StatusCreated, a.Status, string(a.Raw))
	require.Equal(t, []any{"runs:read"}, a.data()["scopes"])
	exp, err := time.Parse(time.RFC3339Nano, a.data()["expiresAt"].(string))
	require.NoError(t, err)
	require.Equal(t, clock.Now().Add(300*time.Millisecond).UnixMilli(), exp.UnixMilli())
	brief := a.data()["token"].(string)
	clock.Advance(299 * time.Millisecond)
	require.Equal(t, http.StatusOK, e.doAs(brief, "GET", "/api/runs", nil).Status)
	clock.Advance(time.Millisecond)
	require.Equal(t, http.StatusUnauthorized, e.doAs(brief, "GET", "/api/runs", nil).Status, "an expired token is refused")

	for _, body := range []map[string]any{
		{"name": "x", "expiresIn": "soon"},
		{"name": "x", "expiresIn": "-1h"},
		{"name": "x", "scopes": []string{"root"}},
		{"name": "x", "scopes": []string{}},
		{"name": "x", "scopes": []string{"runs:write:workflow=Bad"}},
	} {
		a := e.do("POST", "/api/tokens", body)
		require.Equal(t, http.StatusBadRequest, a.Status, "%v: %s", body, a.Raw)
	}
	a = e.do("POST", "/api/tokens", map[string]any{"name": "default"})
	require.Equal(t, []any{"admin"}, a.data()["scopes"], "no scopes: the creator's own")
	require.Nil(t, a.data()["expiresAt"])
}

func TestOpenAPIDocumentsScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/openapi.json", nil).Raw, &doc))
	op := doc["paths"].(map[string]any)["/api/tokens"].(map[string]any)["post"].(map[string]any)
	require.Equal(t, "admin", op["x-gorunner-scope"])
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	for _, field := range []string{`"expiresIn"`, `"expiresAt"`, `"scopes"`, `"runs:write on the workflow`} {
		require.Contains(t, string(raw), field)
	}
}

// TestWebhookURLOnlyForWhoMayRun: the webhook address starts runs without a token, so a
// workflow's view names it only to a token that may start its runs (runs:write on it) or
// holds workflows:write; a reader sees no address.
func TestWebhookURLOnlyForWhoMayRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	charge := greetDef("charge")
	charge["tags"] = []any{"billing"}
	for _, def := range []map[string]any{greetDef("greet"), charge} {
		e.publish(def)
	}
	for _, tc := range []struct {
		name    string
		token   string
		visible map[string]bool // workflow → webhookUrl shown
	}{
		{"admin", e.token, map[string]bool{"greet": true, "charge": true}},
		{"runs:read", e.mint("r", "runs:read"), map[string]bool{"greet": false, "charge": false}},
		{"runs:read:workflow=greet", e.mint("rg", "runs:read:workflow=greet"), map[string]bool{"greet": false}},
		{"runs:write:tag=billing", e.mint("rb", "runs:read", "runs:write:tag=billing"), map[string]bool{"greet": false, "charge": true}},
		{"workflows:write", e.mint("ww", "runs:read", "workflows:write"), map[string]bool{"greet": true, "charge": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, want := range tc.visible {
				a := e.doAs(tc.token, "GET", "/api/workflows/"+name, nil)
				require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
				_, shown := a.data()["webhookUrl"]
				require.Equal(t, want, shown, "%s as %s: %s", name, tc.name, a.Raw)
			}
			list := e.doAs(tc.token, "GET", "/api/workflows", nil)
			require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
			for _, item := range list.Body["data"].([]any) {
				w := item.(map[string]any)
				_, shown := w["webhookUrl"]
				require.Equal(t, tc.visible[w["name"].(string)], shown, "listed %s as %s", w["name"], tc.name)
			}
		})
	}
}
