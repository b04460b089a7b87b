package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
)

func TestWorkflowRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name   string
		setup  func(e *env) string // returns the path of the request
		method string
		body   any
		header []string
		status int
		code   string
		check  func(t *testing.T, e *env, a answer)
	}{
		{
			name: "create", method: "POST", body: greetDef("c-create"), status: 201,
			setup: func(*env) string { return "/api/workflows" },
			check: func(t *testing.T, e *env, a answer) {
				d := a.data()
				require.Equal(t, "c-create", d["name"])
				require.EqualValues(t, 1, d["rev"])
				require.Nil(t, d["latestVersion"])
				require.Equal(t, false, d["published"])
				require.True(t, strings.HasPrefix(d["webhookUrl"].(string), e.srv.URL+"/webhooks/wh_"))
				require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-7`, d["id"])
			},
		},
		{
			name: "create duplicate name", method: "POST", body: greetDef("c-dup"), status: 409, code: "CONFLICT",
			setup: func(e *env) string { e.create("c-dup"); return "/api/workflows" },
		},
		{
			name: "create invalid definition lists every problem", method: "POST", status: 400, code: "VALIDATION_ERROR",
			body:  map[string]any{"name": "Bad Name", "input": map[string]any{"type": "string"}, "steps": []any{}},
			setup: func(*env) string { return "/api/workflows" },
			check: func(t *testing.T, _ *env, a answer) {
				details := a.Body["error"].(map[string]any)["details"].([]any)
				paths := map[string]bool{}
				for _, d := range details {
					paths[d.(map[string]any)["path"].(string)] = true
				}
				require.True(t, paths["/name"], "%v", paths)
				require.True(t, paths["/input"] || paths["/input/type"], "%v", paths)
				require.True(t, paths["/steps"], "%v", paths)
			},
		},
		{
			name: "create malformed JSON", method: "POST", body: `{"name": `, status: 400, code: "VALIDATION_ERROR",
			setup: func(*env) string { return "/api/workflows" },
		},
		{
			name: "create unknown field", method: "POST", status: 400, code: "VALIDATION_ERROR",
			body:  func() map[string]any { d := greetDef("c-unknown"); d["colour"] = "red"; return d }(),
			setup: func(*env) string { return "/api/workflows" },
		},
		{
			name: "create invalid UTF-8", method: "POST", status: 400, code: "VALIDATION_ERROR",
			body:  []byte("{\"name\": \"a\xff\"}"),
			setup: func(*env) string { return "/api/workflows" },
		},
		{
			name: "create reserved prefix", method: "POST", body: greetDef("gorunner_x"), status: 400, code: "VALIDATION_ERROR",
			setup: func(*env) string { return "/api/workflows" },
		},
		{
			name: "create body over 1 MiB", method: "POST", body: strings.Repeat(" ", 1<<20+1), status: 413, code: "PAYLOAD_TOO_LARGE",
			setup: func(*env) string { return "/api/workflows" },
		},
		{
			name: "import YAML", method: "POST", status: 201,
			body:  "name: c-yaml\ninput: {type: object}\nsteps:\n  - id: a\n    set: 1\n",
			setup: func(*env) string { return "/api/workflows/import" },
			check: func(t *testing.T, _ *env, a answer) { require.Equal(t, "c-yaml", a.data()["name"]) },
		},
		{
			name: "list", method: "GET", status: 200,
			setup: func(e *env) string { e.create("c-list"); return "/api/workflows?limit=1000" },
			check: func(t *testing.T, _ *env, a answer) {
				require.NotEmpty(t, a.Body["data"])
				require.NotContains(t, a.Body, "nextCursor")
			},
		},
		{
			name: "list bad limit", method: "GET", status: 400, code: "VALIDATION_ERROR",
			setup: func(*env) string { return "/api/workflows?limit=0" },
		},
		{
			name: "get by name", method: "GET", status: 200,
			setup: func(e *env) string { e.create("c-get"); return "/api/workflows/c-get" },
			check: func(t *testing.T, _ *env, a answer) { require.Equal(t, "c-get", a.data()["name"]) },
		},
		{
			name: "get by id", method: "GET", status: 200,
			setup: func(e *env) string { return "/api/workflows/" + e.create("c-get-id")["id"].(string) },
			check: func(t *testing.T, _ *env, a answer) { require.Equal(t, "c-get-id", a.data()["name"]) },
		},
		{
			name: "get unknown", method: "GET", status: 404, code: "NOT_FOUND",
			setup: func(*env) string { return "/api/workflows/nope" },
		},
		{
			name: "export JSON", method: "GET", status: 200,
			setup: func(e *env) string { e.create("c-export"); return "/api/workflows/c-export/export" },
			check: func(t *testing.T, _ *env, a answer) {
				require.Equal(t, "c-export", a.Body["name"])
				require.NotContains(t, a.Body, "data")
			},
		},
		{
			name: "export YAML", method: "GET", status: 200, header: []string{"Accept", "application/yaml"},
			setup: func(e *env) string { e.create("c-export-y"); return "/api/workflows/c-export-y/export" },
			check: func(t *testing.T, _ *env, a answer) {
				require.Equal(t, "application/yaml", a.Header.Get("Content-Type"))
				require.Contains(t, string(a.Raw), "name: c-export-y")
			},
		},
		{
			name: "update bumps rev", method: "PUT", status: 200, body: greetDef("c-put"),
			setup: func(e *env) string { e.create("c-put"); return "/api/workflows/c-put" },
			check: func(t *testing.T, _ *env, a answer) { require.EqualValues(t, 2, a.data()["rev"]) },
		},
		{
			name: "update with matching expectedRev", method: "PUT", status: 200,
			body:  func() map[string]any { d := greetDef("c-put-rev"); d["expectedRev"] = 1; return d }(),
			setup: func(e *env) string { e.create("c-put-rev"); return "/api/workflows/c-put-rev" },
		},
		{
			name: "update with stale expectedRev", method: "PUT", status: 409, code: "CONFLICT",
			body:  func() map[string]any { d := greetDef("c-put-stale"); d["expectedRev"] = 7; return d }(),
			setup: func(e *env) string { e.create("c-put-stale"); return "/api/workflows/c-put-stale" },
		},
		{
			name: "update unknown", method: "PUT", status: 404, code: "NOT_FOUND", body: greetDef("x"),
			setup: func(*env) string { return "/api/workflows/nope" },
		},
		{
			name: "delete", method: "DELETE", status: 204,
			setup: func(e *env) string { e.create("c-del"); return "/api/workflows/c-del" },
			check: func(t *testing.T, e *env, _ answer) {
				require.Equal(t, 404, e.do("DELETE", "/api/workflows/c-del", nil).Status)
				require.Equal(t, 404, e.do("GET", "/api/workflows/c-del", nil).Status)
			},
		},
		{
			name: "duplicate", method: "POST", status: 201, body: map[string]any{"name": "c-dup-copy2"},
			setup: func(e *env) string { e.create("c-dup-src"); return "/api/workflows/c-dup-src/duplicate" },
			check: func(t *testing.T, _ *env, a answer) {
				require.Equal(t, "c-dup-copy2", a.data()["name"])
				require.EqualValues(t, 1, a.data()["rev"])
			},
		},
		{
			name: "duplicate default name", method: "POST", status: 201,
			setup: func(e *env) string { e.create("c-dup2"); return "/api/workflows/c-dup2/duplicate" },
			check: func(t *testing.T, _ *env, a answer) { require.Equal(t, "c-dup2-copy", a.data()["name"]) },
		},
		{
			name: "publish", method: "POST", status: 201,
			setup: func(e *env) string { e.create("c-pub"); return "/api/workflows/c-pub/publish" },
			check: func(t *testing.T, e *env, a answer) {
				require.EqualValues(t, 1, a.data()["version"])
				again := e.do("POST", "/api/workflows/c-pub/publish", nil)
				require.Equal(t, 200, again.Status)
				require.Equal(t, a.data(), again.data())
				w := e.do("GET", "/api/workflows/c-pub", nil).data()
				require.EqualValues(t, 1, w["latestVersion"])
				require.Equal(t, true, w["published"])
			},
		},
		{
			name: "unpublish", method: "POST", status: 200,
			setup: func(e *env) string {
				e.create("c-unpub")
				e.do("POST", "/api/workflows/c-unpub/publish", nil)
				return "/api/workflows/c-unpub/unpublish"
			},
			check: func(t *testing.T, _ *env, a answer) { require.Equal(t, false, a.data()["published"]) },
		},
		{
			name: "versions", method: "GET", status: 200,
			setup: func(e *env) string {
				e.create("c-vers")
				e.do("POST", "/api/workflows/c-vers/publish", nil)
				d := greetDef("c-vers")
				d["title"] = "v2"
				e.do("PUT", "/api/workflows/c-vers", d)
				e.do("POST", "/api/workflows/c-vers/publish", nil)
				return "/api/workflows/c-vers/versions"
			},
			check: func(t *testing.T, _ *env, a answer) {
				list := a.Body["data"].([]any)
				require.Len(t, list, 2)
				require.EqualValues(t, 2, list[0].(map[string]any)["version"])
			},
		},
		{
			name: "webhook rotate", method: "POST", status: 201,
			setup: func(e *env) string { e.create("c-rot"); return "/api/workflows/c-rot/webhook/rotate" },
			check: func(t *testing.T, e *env, a answer) {
				d := a.data()
				require.True(t, strings.HasSuffix(d["url"].(string), "/webhooks/"+d["token"].(string)))
				require.Equal(t, d["url"], e.do("GET", "/api/workflows/c-rot", nil).data()["webhookUrl"])
			},
		},
		{
			name: "no token", method: "GET", status: 401, code: "UNAUTHORIZED",
			setup: func(e *env) string { e.token = ""; return "/api/workflows" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sub := &env{t: t, srv: e.srv, token: e.token, store: e.store}
			path := tc.setup(sub)
			a := sub.do(tc.method, path, tc.body, tc.header...)
			require.Equal(t, tc.status, a.Status, string(a.Raw))
			if tc.code != "" {
				require.Equal(t, tc.code, a.errorCode(), string(a.Raw))
			}
			if tc.check != nil {
				tc.check(t, sub, a)
			}
		})
	}
}

func TestAuthRejectsBadTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tok := range []string{"", "gr_nope", "not-a-token", e.token + "x"} {
		a := e.doAs(tok, "GET", "/api/workflows", nil)
		require.Equal(t, http.StatusUnauthorized, a.Status, tok)
		require.Equal(t, "UNAUTHORIZED", a.errorCode())
		require.Contains(t, a.Header.Get("WWW-Authenticate"), "Bearer")
	}
}

func TestTokenRevokeTakesEffectOnNextRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Equal(t, 400, e.do("POST", "/api/tokens", map[string]any{"name": " "}).Status)
	require.Equal(t, 400, e.do("POST", "/api/tokens", map[string]any{"name": "ci", "admin": true}).Status, "unknown field")
	created := e.do("POST", "/api/tokens", map[string]any{"name": "ci"})
	require.Equal(t, 201, created.Status, string(created.Raw))
	secret := created.data()["token"].(string)
	require.True(t, strings.HasPrefix(secret, "gr_"))
	require.Equal(t, 200, e.doAs(secret, "GET", "/api/workflows", nil).Status)
	list := e.do("GET", "/api/tokens", nil)
	require.NotContains(t, string(list.Raw), secret)
	require.Equal(t, 204, e.do("DELETE", "/api/tokens/"+created.data()["id"].(string), nil).Status)
	require.Equal(t, 401, e.doAs(secret, "GET", "/api/workflows", nil).Status)
}

func TestConnectionsNeverReturnSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const secret = "s3cr3t-value"
	hosts := []string{"api.payments.example"}
	a := e.do("POST", "/api/connections", map[string]any{"name": "payments", "type": "bearer", "secret": secret, "hosts": hosts})
	require.Equal(t, 201, a.Status, string(a.Raw))
	require.NotContains(t, string(a.Raw), secret)
	require.Equal(t, 409, e.do("POST", "/api/connections", map[string]any{"name": "payments", "type": "bearer", "secret": "x", "hosts": hosts}).Status)
	require.Equal(t, 400, e.do("POST", "/api/connections", map[string]any{"name": "p2", "type": "magic", "secret": "x", "hosts": hosts}).Status)
	list := e.do("GET", "/api/connections", nil)
	require.Equal(t, 200, list.Status)
	require.NotContains(t, string(list.Raw), secret)
	require.Len(t, list.Body["data"], 1)
	require.Equal(t, []any{"api.payments.example"}, list.Body["data"].([]any)[0].(map[string]any)["hosts"])
	require.Equal(t, 204, e.do("DELETE", "/api/connections/payments", nil).Status)
	require.Equal(t, 404, e.do("DELETE", "/api/connections/payments", nil).Status)
}

// TestConnectionHosts checks that a connection must name valid hosts, each problem answered
// with its pointer, and that the hosts are kept in their normal form.
func TestConnectionHosts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tooMany := make([]string, catalog.MaxConnectionHosts+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("h%d.example", i)
	}
	tests := []struct {
		name  string
		hosts any
		path  string
	}{
		{"missing", nil, "/hosts"},
		{"empty", []string{}, "/hosts"},
		{"one past the limit", tooMany, "/hosts"},
		{"a URL", []string{"api.example", "https://evil.example/"}, "/hosts/1"},
		{"a bare wildcard", []string{"*"}, "/hosts/0"},
		{"a wildcard over a top-level domain", []string{"*.com"}, "/hosts/0"},
		{"a path", []string{"api.example/x"}, "/hosts/0"},
		{"port zero", []string{"api.example:0"}, "/hosts/0"},
		{"a port out of range", []string{"api.example:70000"}, "/hosts/0"},
		{"a user part", []string{"user@api.example"}, "/hosts/0"},
	}
	for i, tt := range tests {
		body := map[string]any{"name": fmt.Sprintf("bad-%d", i), "type": "bearer", "secret": "x"}
		if tt.hosts != nil {
			body["hosts"] = tt.hosts
		}
		a := e.do("POST", "/api/connections", body)
		require.Equal(t, 400, a.Status, "%s: %s", tt.name, a.Raw)
		details := a.Body["error"].(map[string]any)["details"].([]any)
		require.Equal(t, tt.path, details[0].(map[string]any)["path"], tt.name)
	}

	atLimit := append([]string(nil), tooMany[:catalog.MaxConnectionHosts]...)
	require.Equal(t, 201, e.do("POST", "/api/connections", map[string]any{"name": "many", "type": "bearer", "secret": "x", "hosts": atLimit}).Status)
	a := e.do("POST", "/api/connections", map[string]any{"name": "ok", "type": "header", "header": "X-Key", "secret": "x",
		"hosts": []string{"API.Example.", "*.Internal.example:8443", "[::FFFF:127.0.0.1]:9000", "[fd00::1]"}})
	require.Equal(t, 201, a.Status, string(a.Raw))
	require.Equal(t, []any{"api.example", "*.internal.example:8443", "127.0.0.1:9000", "[fd00::1]"}, a.data()["hosts"])
}

func TestTemplates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	list := e.do("GET", "/api/templates", nil)
	require.Equal(t, 200, list.Status)
	require.GreaterOrEqual(t, len(list.Body["data"].([]any)), 4)
	a := e.do("POST", "/api/templates/greet/use", map[string]any{"name": "my-greet"})
	require.Equal(t, 201, a.Status, string(a.Raw))
	require.Equal(t, "my-greet", a.data()["name"])
	require.Equal(t, 404, e.do("POST", "/api/templates/nope/use", nil).Status)
}

func TestPublicEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"/healthz", "/readyz", "/schemas/workflow.json", "/api/openapi.json"} {
		a := e.doAs("", "GET", p, nil)
		require.Equal(t, 200, a.Status, p)
		require.NotEmpty(t, a.Header.Get("X-Request-Id"), p)
	}
	doc := e.doAs("", "GET", "/api/openapi.json", nil)
	require.Equal(t, "3.1.0", doc.Body["openapi"])
	paths := doc.Body["paths"].(map[string]any)
	require.Contains(t, paths, "/api/workflows/{id}/publish")
	require.Contains(t, paths, "/webhooks/{token}")
}
