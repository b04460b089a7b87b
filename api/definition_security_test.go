package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/schemas"
)

// requirePointer requires a 400 VALIDATION_ERROR listing a problem at path.
func requirePointer(t *testing.T, a answer, path string) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, a.Status, string(a.Raw))
	require.Equal(t, "VALIDATION_ERROR", a.errorCode())
	details, _ := a.Body["error"].(map[string]any)["details"].([]any)
	for _, d := range details {
		if d.(map[string]any)["path"] == path {
			return
		}
	}
	require.Failf(t, "pointer not found", "want %s in %s", path, a.Raw)
}

// TestSecurityDefinitionsRefused sends the hostile definitions of issues #10 (items 4, 7) and
// #11 (item 5) to the real API: each is 400 with the JSON pointer of the value at fault.
func TestSecurityDefinitionsRefused(t *testing.T) {
	e := newEnv(t)
	with := func(name string, change func(map[string]any)) map[string]any {
		d := greetDef(name)
		change(d)
		return d
	}
	step := func(s map[string]any) func(map[string]any) {
		return func(d map[string]any) { d["steps"] = []any{s} }
	}
	// slowHTTP would hold a worker for an hour per attempt against a server trickling bytes.
	slowHTTP := map[string]any{"id": "slow", "http": map[string]any{"url": "https://example.com"}, "timeout": "1h"}
	tests := []struct {
		name string
		def  map[string]any
		path string
	}{
		{"sleep overflowing UnixNano", with("s1", step(map[string]any{"id": "a", "sleep": map[string]any{"duration": "2562047h"}})), "/steps/0/sleep/duration"},
		{"sleep until year 9999", with("s2", step(map[string]any{"id": "a", "sleep": map[string]any{"until": "9999-12-31T23:59:59Z"}})), "/steps/0/sleep/until"},
		{"retry interval", with("s3", step(map[string]any{"id": "a", "set": 1, "retry": map[string]any{"maxInterval": "100000h"}})), "/steps/0/retry/maxInterval"},
		{"timeout", with("s4", step(map[string]any{"id": "a", "set": 1, "timeout": "100000h"})), "/steps/0/timeout"},
		{"http timeout over schemas.MaxHTTPTimeout", with("s5", step(slowHTTP)), "/steps/0/timeout"},
		{"ESC in title", with("t1", func(d map[string]any) { d["title"] = "Greet\x1b[8m hidden" }), "/title"},
		{"bidi override in description", with("t2", func(d map[string]any) { d["description"] = "safe \u202egnp.exe" }), "/description"},
		{"NUL in an input description", with("t3", func(d map[string]any) {
			d["input"].(map[string]any)["properties"].(map[string]any)["name"].(map[string]any)["description"] = "a\x00b"
		}), "/input/properties/name/description"},
		{"a 500,000-character title", with("l1", func(d map[string]any) { d["title"] = strings.Repeat("t", 500_000) }), "/title"},
		{"a description one past its bound", with("l2", func(d map[string]any) {
			d["description"] = strings.Repeat("d", schemas.MaxDescriptionLength+1)
		}), "/description"},
		{"an input title one past its bound", with("l3", func(d map[string]any) {
			d["input"].(map[string]any)["properties"].(map[string]any)["name"].(map[string]any)["title"] = strings.Repeat("n", schemas.MaxTitleLength+1)
		}), "/input/properties/name/title"},
		{"POST claiming read-only", with("a1", func(d map[string]any) {
			d["annotations"] = map[string]any{"readOnly": true}
			d["steps"] = []any{map[string]any{"id": "a", "http": map[string]any{"method": "POST", "url": "https://example.com"}}}
		}), "/annotations/readOnly"},
		{"http claiming closed world", with("a2", func(d map[string]any) {
			d["annotations"] = map[string]any{"openWorld": false}
			d["steps"] = []any{map[string]any{"id": "a", "http": map[string]any{"url": "https://example.com"}}}
		}), "/annotations/openWorld"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requirePointer(t, e.do("POST", "/api/workflows", tc.def), tc.path)
		})
	}

	t.Run("publish of a draft stored before the http cap", func(t *testing.T) {
		wf := e.create("stored-slow")
		def := with("stored-slow", step(slowHTTP))
		raw, err := json.Marshal(def)
		require.NoError(t, err)
		id := wf["id"].(string)
		_, err = e.store.UpdateDraft(context.Background(), id, &catalog.Workflow{Name: "stored-slow", Title: "Greet", Definition: raw}, 0, time.Now())
		require.NoError(t, err)
		a := e.do("POST", "/api/workflows/"+id+"/publish", nil)
		requirePointer(t, a, "/steps/0/timeout")
		require.Contains(t, string(a.Raw), `step \"slow\": timeout 1h is over 15m`)
	})

	t.Run("update", func(t *testing.T) {
		wf := e.create("updated")
		bad := with("updated", func(d map[string]any) { d["title"] = "x\u2066y" })
		requirePointer(t, e.do("PUT", "/api/workflows/"+wf["id"].(string), bad), "/title")
	})
}

// TestSecurityDeepDocumentsConcurrently: eight 20 KB documents nested 9,990 deep, sent at once
// as YAML (block and flow) and JSON, are each 400 while the heap grows by less than 50 MB
// (issue #10 item 7). Not parallel: it reads the process's allocation counters.
func TestSecurityDeepDocumentsConcurrently(t *testing.T) {
	e := newEnv(t)
	const levels = 9990
	docs := map[string]string{
		"yaml block": "name: deep\ninput: {type: object}\nresult:\n  " + strings.Repeat("- ", levels) + "x\nsteps: [{id: a, set: 1}]\n",
		"yaml flow":  "name: deep\ninput: {type: object}\nresult: " + strings.Repeat("[", levels) + strings.Repeat("]", levels) + "\nsteps: [{id: a, set: 1}]\n",
		"json":       `{"name":"deep","input":{"type":"object"},"result":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + `,"steps":[{"id":"a","set":1}]}`,
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			answers := make([]answer, 8)
			var wg sync.WaitGroup
			for i := range answers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					answers[i] = e.do("POST", "/api/workflows/import", doc)
				}()
			}
			wg.Wait()
			runtime.ReadMemStats(&after)
			for _, a := range answers {
				require.Equal(t, http.StatusBadRequest, a.Status, string(a.Raw))
				require.Contains(t, string(a.Raw), "nested more than 128 levels deep")
			}
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(50<<20))
		})
	}
}
