package main_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
)

// TestRunsListFollowsShortPages: `gorunner runs list` gathers --limit runs through the
// pages of a list that end short, even empty, with a nextCursor (a page examines a bounded
// number of runs), asking each for the runs still wanted, and stops at the last page.
func TestRunsListFollowsShortPages(t *testing.T) {
	t.Parallel()
	pages := map[string]struct {
		ids  []string
		next string
	}{
		"":   {nil, "c1"},
		"c1": {[]string{"run-a"}, "c2"},
		"c2": {nil, "c3"},
		"c3": {[]string{"run-b", "run-c"}, "c4"},
		"c4": {[]string{"run-d"}, ""},
	}
	var mu sync.Mutex
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/runs" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		mu.Lock()
		asked = append(asked, q.Get("cursor")+"/"+q.Get("limit")+"/"+q.Get("status"))
		mu.Unlock()
		page := pages[q.Get("cursor")]
		runs := []map[string]any{}
		for _, id := range page.ids {
			runs = append(runs, map[string]any{"id": id, "workflow": "hello", "version": 1, "environment": "production",
				"status": "failed", "createdAt": "2026-01-01T00:00:00Z"})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": runs, "nextCursor": page.next})
	}))
	t.Cleanup(api.Close)

	out, stderr, code := cliEnv(t, &server{url: api.URL, dataDir: t.TempDir()}, []string{"GORUNNER_TOKEN=t"}, "runs", "list", "--status", "failed", "--limit", "3", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var runs []struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &runs), out)
	got := make([]string, len(runs))
	for i, r := range runs {
		got[i] = r.ID
	}
	require.Equal(t, []string{"run-a", "run-b", "run-c"}, got)
	require.Equal(t, "/3/failed c1/3/failed c2/2/failed c3/2/failed", strings.Join(asked, " "), "each page asks for the runs still wanted")
}

// TestRunsListSaysWhenItStopsAtTheBound: a list whose pages keep coming back empty with a
// nextCursor is read for a bounded number of pages (runner.Collect); `gorunner runs list`
// then shows what it found and says on stderr that older runs may match.
func TestRunsListSaysWhenItStopsAtTheBound(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	pages := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		pages++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": []any{}, "nextCursor": "more"})
	}))
	t.Cleanup(api.Close)

	out, stderr, code := cliEnv(t, &server{url: api.URL, dataDir: t.TempDir()}, []string{"GORUNNER_TOKEN=t"}, "runs", "list", "--status", "failed", "-o", "json")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, `[]`, out)
	require.Contains(t, stderr, "older ones may match too")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, runner.MaxListExamined/limits.MaxRunsExamined, pages)
}
