package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// listRoutes are the GET operations of the OpenAPI document that answer a list (a
// nextCursor in their answer), with the workflow path parameter filled in.
func listRoutes(t *testing.T, e *env, workflow string) []string {
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]any `json:"properties"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(e.do("GET", "/api/openapi.json", nil).Raw, &doc))
	var paths []string
	for path, ops := range doc.Paths {
		get, ok := ops["get"]
		if !ok {
			continue
		}
		if _, list := get.Responses["200"].Content["application/json"].Schema.Properties["nextCursor"]; list {
			paths = append(paths, strings.ReplaceAll(path, "{id}", workflow))
		}
	}
	return paths
}

// TestEveryListRefusesBadLimits performs issue #27's item 7: ?limit=-1, ?limit=abc and the
// rest on every list route (tokens, grants and versions answered 200 and ignored them) is a
// 400 naming the parameter, as on /api/runs.
func TestEveryListRefusesBadLimits(t *testing.T) {
	e := newEnv(t)
	e.create("listed")
	routes := listRoutes(t, e, "listed")
	for _, want := range []string{"/api/tokens", "/api/oauth/grants", "/api/workflows/listed/versions", "/api/runs",
		"/api/workflows", "/api/connections", "/api/templates", "/api/idempotency-keys"} {
		require.Contains(t, routes, want)
	}
	for _, path := range routes {
		for _, limit := range []string{"-1", "0", "abc", "1001", "1.5"} {
			requirePointer(t, e.do("GET", path+"?limit="+limit, nil), "/limit")
		}
		a := e.do("GET", path+"?limit=1000", nil)
		require.NotEqual(t, http.StatusBadRequest, a.Status, "%s: %s", path, a.Raw)
	}
	for _, path := range []string{"/api/tokens", "/api/workflows/listed/versions", "/api/connections", "/api/templates"} {
		for _, cursor := range []string{"abc", "0", "-3"} {
			requirePointer(t, e.do("GET", path+"?cursor="+cursor, nil), "/cursor")
		}
	}
}

// TestHeldListsPage: a list its store gives whole (here the tokens) pages as any other,
// ?limit= items a page, following nextCursor to the last page, which has none.
func TestHeldListsPage(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"one", "two", "three", "four"} {
		require.Equal(t, http.StatusCreated, e.do("POST", "/api/tokens", map[string]any{"name": name}).Status)
	}
	whole := e.do("GET", "/api/tokens", nil)
	require.Equal(t, http.StatusOK, whole.Status)
	require.NotContains(t, whole.Body, "nextCursor")
	want := whole.Body["data"].([]any)
	require.Len(t, want, 5, "the admin token and four")

	var got []any
	path := "/api/tokens?limit=2"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		a := e.do("GET", path, nil)
		require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
		page := a.Body["data"].([]any)
		require.LessOrEqual(t, len(page), 2)
		got = append(got, page...)
		next, ok := a.Body["nextCursor"].(string)
		if !ok {
			break
		}
		path = "/api/tokens?limit=2&cursor=" + next
	}
	require.Equal(t, want, got)
	a := e.do("GET", "/api/tokens?cursor=99", nil)
	require.Equal(t, http.StatusOK, a.Status, "a cursor past the end (the list shrank) is an empty last page")
	require.Empty(t, a.Body["data"])
}
