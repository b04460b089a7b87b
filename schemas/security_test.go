package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireProblem validates doc and requires a problem at path whose message holds msg.
func requireProblem(t *testing.T, doc []byte, path, msg string) {
	t.Helper()
	d, err := Decode(doc)
	require.NoError(t, err)
	problems := Validate(d, ValidateOptions{CustomKinds: map[string]bool{"custom": true}})
	for _, p := range problems {
		if p.Path == path && strings.Contains(p.Message, msg) {
			return
		}
	}
	require.Failf(t, "problem not found", "want %s %q in %+v", path, msg, problems)
}

// requireValid decodes and validates doc without any problem.
func requireValid(t *testing.T, doc []byte) {
	t.Helper()
	d, err := Decode(doc)
	require.NoError(t, err)
	require.Empty(t, Validate(d, ValidateOptions{CustomKinds: map[string]bool{"custom": true}}))
}

// TestSecurityDurations: durations and until times beyond MaxDuration are refused with the
// pointer of the literal (issue #10 item 4); the longest allowed still decodes.
func TestSecurityDurations(t *testing.T) {
	t.Parallel()
	tooLong := (MaxDuration + time.Hour).String()
	decodeTests := []struct {
		name, doc, path string
	}{
		{"sleep duration overflowing UnixNano", `{"steps":[{"id":"a","sleep":{"duration":"2562047h"}}]}`, "/steps/0/sleep/duration"},
		{"sleep one hour past", `{"steps":[{"id":"a","sleep":{"duration":"` + tooLong + `"}}]}`, "/steps/0/sleep/duration"},
		{"step timeout", `{"steps":[{"id":"a","set":1,"timeout":"` + tooLong + `"}]}`, "/steps/0/timeout"},
		{"retry initialInterval", `{"steps":[{"id":"a","set":1,"retry":{"initialInterval":"` + tooLong + `"}}]}`, "/steps/0/retry/initialInterval"},
		{"retry maxInterval", `{"steps":[{"id":"a","set":1,"retry":{"maxInterval":"2562047h"}}]}`, "/steps/0/retry/maxInterval"},
		{"hook timeout", `{"steps":[{"id":"a","hook":{"token":"t","timeout":"2562047h"}}]}`, "/steps/0/hook/timeout"},
		{"tool timeout", `{"toolTimeout":"2562047h"}`, "/toolTimeout"},
	}
	for _, tc := range decodeTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode([]byte(tc.doc))
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, tc.path, de.Path)
			require.Contains(t, de.Message, "10 years")
		})
	}
	requireValid(t, stepsWith(t, `{"id":"a","sleep":{"duration":"`+MaxDuration.String()+`"}}`))

	requireProblem(t, stepsWith(t, `{"id":"a","sleep":{"until":"9999-12-31T23:59:59Z"}}`), "/steps/1/sleep/until", "10 years")
	past := time.Now().Add(MaxDuration + 24*time.Hour).UTC().Format(time.RFC3339)
	requireProblem(t, stepsWith(t, `{"id":"a","sleep":{"until":"`+past+`"}}`), "/steps/1/sleep/until", "10 years")
	within := time.Now().Add(MaxDuration - 24*time.Hour).UTC().Format(time.RFC3339)
	requireValid(t, stepsWith(t, `{"id":"a","sleep":{"until":"`+within+`"}}`))
	requireValid(t, stepsWith(t, `{"id":"a","sleep":{"until":"2001-01-01T00:00:00Z"}}`))

	err := CheckUntil(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Now())
	require.True(t, errors.Is(err, ErrDurationRange))
}

// TestSecurityHTTPTimeout: an http step's timeout is at most MaxHTTPTimeout, since an attempt
// holds a worker for all of it; a step of another kind keeps up to MaxDuration, since its
// waits hold none.
func TestSecurityHTTPTimeout(t *testing.T) {
	t.Parallel()
	over := (MaxHTTPTimeout + time.Second).String()
	requireProblem(t, stepsWith(t, `{"id":"slow","http":{"url":"https://x"},"timeout":"`+over+`"}`),
		"/steps/1/timeout", `step "slow": timeout 15m1s is over 15m`)
	requireProblem(t, stepsWith(t, `{"id":"slow","http":{"url":"https://x"},"timeout":"`+MaxDuration.String()+`"}`),
		"/steps/1/timeout", "over 15m")
	requireValid(t, stepsWith(t, `{"id":"a","http":{"url":"https://x"},"timeout":"`+MaxHTTPTimeout.String()+`"}`))
	requireValid(t, stepsWith(t, `{"id":"a","hook":{"token":"t"},"timeout":"`+MaxDuration.String()+`"}`))
	requireValid(t, stepsWith(t, `{"id":"a","custom":{},"timeout":"1h"}`))
}

// deepDocuments are 20 KB definitions nested 9,990 deep, as issue #10 item 7 sent them (and
// one nested 200 deep by indentation alone, which is as deep as 20 KB allows).
func deepDocuments() map[string][]byte {
	const levels = 9990
	compact := "name: wf\nresult:\n  " + strings.Repeat("- ", levels) + "x\n"
	indented := "name: wf\nresult:\n"
	for i := range 200 {
		indented += strings.Repeat(" ", i+1) + "a:\n"
	}
	return map[string][]byte{
		"yaml block":          []byte(compact),
		"yaml block indented": []byte(indented),
		"yaml flow":           []byte("name: wf\nresult: " + strings.Repeat("[", levels) + strings.Repeat("]", levels) + "\n"),
		"yaml flow mappings":  []byte("name: wf\nresult: " + strings.Repeat("{a: ", levels) + "1" + strings.Repeat("}", levels) + "\n"),
		"yaml after a quote":  []byte("name: wf\ntitle: it's [x\nresult: " + strings.Repeat("[", levels) + strings.Repeat("]", levels) + "\n"),
		"json":                []byte(`{"name":"wf","result":` + strings.Repeat("[", levels) + strings.Repeat("]", levels) + "}"),
	}
}

// TestSecurityDeepDocuments: eight deep documents decoded at once are each refused, and the
// heap grows by far less than 50 MB (issue #10 item 7). Not parallel: it reads the heap.
func TestSecurityDeepDocuments(t *testing.T) {
	for name, doc := range deepDocuments() {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = Decode(doc)
				}()
			}
			wg.Wait()
			runtime.ReadMemStats(&after)
			for _, err := range errs {
				var de *DecodeError
				require.ErrorAs(t, err, &de)
				require.Contains(t, de.Message, fmt.Sprintf("nested more than %d levels deep", MaxDepth))
			}
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(50<<20))
		})
	}
}

// TestSecurityYAMLDepthAllowed: ordinary YAML, and YAML nested up to MaxDepth, still decodes.
func TestSecurityYAMLDepthAllowed(t *testing.T) {
	t.Parallel()
	nested := "name: wf\nresult: " + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + "\n"
	_, err := Decode([]byte(nested))
	require.NoError(t, err)
	over := "name: wf\nresult: " + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + "\n"
	_, err = Decode([]byte(over))
	require.ErrorContains(t, err, "nested more than")
	script := "name: wf\ntitle: 'it''s [not' # [ nor this\nresult: |\n" + strings.Repeat("  {[(\n", 300) + "steps: []\n"
	_, err = Decode([]byte(script))
	require.NoError(t, err)
	_, err = Decode(readTestdata(t, "process-order.yaml"))
	require.NoError(t, err)
}

// TestSecurityToolText: control and bidi characters in tool text are refused at their
// pointer (issue #11 item 5); newlines and tabs are fine.
func TestSecurityToolText(t *testing.T) {
	t.Parallel()
	prop := func(field, s string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", field: s}}}
	}
	tests := []struct {
		name string
		over map[string]any
		path string
	}{
		{"ESC in title", map[string]any{"title": "ok\x1b[2Jhidden"}, "/title"},
		{"NUL in description", map[string]any{"description": "a\x00b"}, "/description"},
		{"DEL in title", map[string]any{"title": "a\x7fb"}, "/title"},
		{"C1 in description", map[string]any{"description": "a\u0085b"}, "/description"},
		{"RLO in title", map[string]any{"title": "safe\u202Eevil"}, "/title"},
		{"LRE in description", map[string]any{"description": "x\u202Ay"}, "/description"},
		{"FSI in description", map[string]any{"description": "x\u2068y"}, "/description"},
		{"PDI in title", map[string]any{"title": "x\u2069"}, "/title"},
		{"carriage return", map[string]any{"description": "line\rover"}, "/description"},
		{"RLM in title", map[string]any{"title": "abc\u200Fdef"}, "/title"},
		{"LRM in description", map[string]any{"description": "x\u200Ey"}, "/description"},
		{"ALM in description", map[string]any{"description": "x\u061Cy"}, "/description"},
		{"input property description", map[string]any{"input": prop("description", "x\u202Ey")}, "/input/properties/a/description"},
		{"input property title", map[string]any{"input": prop("title", "x\x1by")}, "/input/properties/a/title"},
		{"output title", map[string]any{"output": map[string]any{"title": "\x07"}}, "/output/title"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireProblem(t, defWith(t, tc.over), tc.path, "control or bidirectional")
		})
	}
	requireValid(t, defWith(t, map[string]any{
		"title": "Order — étape 2 ✓", "description": "Line one\n\tLine two, עברית, العربية",
		"input": prop("description", "a\nb"),
	}))
}

// TestToolTextLengths: a title or description one character past its bound is refused at
// its pointer, wherever it is (issue #27 item 8); at the bound, in characters (not bytes),
// it is fine.
func TestToolTextLengths(t *testing.T) {
	t.Parallel()
	prop := func(field, s string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", field: s}}}
	}
	title, desc := strings.Repeat("é", MaxTitleLength), strings.Repeat("ü", MaxDescriptionLength)
	tests := []struct {
		name string
		over func(title, desc string) map[string]any
		path string
	}{
		{"title", func(ti, _ string) map[string]any { return map[string]any{"title": ti} }, "/title"},
		{"description", func(_, d string) map[string]any { return map[string]any{"description": d} }, "/description"},
		{"input property title", func(ti, _ string) map[string]any { return map[string]any{"input": prop("title", ti)} }, "/input/properties/a/title"},
		{"input property description", func(_, d string) map[string]any { return map[string]any{"input": prop("description", d)} }, "/input/properties/a/description"},
		{"output title", func(ti, _ string) map[string]any {
			return map[string]any{"output": map[string]any{"type": "object", "title": ti}}
		}, "/output/title"},
		{"output description", func(_, d string) map[string]any {
			return map[string]any{"output": map[string]any{"type": "object", "description": d}}
		}, "/output/description"},
		{"ask property title", func(ti, _ string) map[string]any {
			return map[string]any{"steps": []any{map[string]any{"id": "ok", "hook": map[string]any{"token": "t", "ask": map[string]any{
				"message": "Approve?", "schema": prop("title", ti)}}}}}
		}, "/steps/0/hook/ask/schema/properties/a/title"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireValid(t, defWith(t, tc.over(title, desc)))
			requireProblem(t, defWith(t, tc.over(title+"x", desc+"x")), tc.path, "at most")
		})
	}
}

// TestSecurityAnnotations: hints may only be more cautious than the steps (issue #11 item 5).
func TestSecurityAnnotations(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	tests := []struct {
		name  string
		ann   map[string]any
		step  string
		path  string
		valid bool
	}{
		{"http GET not closed world", map[string]any{"openWorld": no}, `{"id":"s","http":{"url":"https://example.com"}}`, "/annotations/openWorld", false},
		{"custom kind not closed world", map[string]any{"openWorld": no}, `{"id":"s","custom":{}}`, "/annotations/openWorld", false},
		{"child workflow not closed world", map[string]any{"openWorld": no}, `{"id":"s","workflow":{"name":"other"}}`, "/annotations/openWorld", false},
		{"http POST not read-only", map[string]any{"readOnly": yes}, `{"id":"s","http":{"method":"POST","url":"https://example.com"}}`, "/annotations/readOnly", false},
		{"http DELETE not read-only", map[string]any{"readOnly": yes}, `{"id":"s","http":{"method":"DELETE","url":"https://example.com"}}`, "/annotations/readOnly", false},
		{"run not read-only", map[string]any{"readOnly": yes}, `{"id":"s","run":{"action":"cancel","runId":"r"}}`, "/annotations/readOnly", false},
		{"workflow not read-only", map[string]any{"readOnly": yes}, `{"id":"s","workflow":{"name":"other"}}`, "/annotations/readOnly", false},
		{"hook not read-only", map[string]any{"readOnly": yes}, `{"id":"s","hook":{"token":"t"}}`, "/annotations/readOnly", false},
		{"custom not read-only", map[string]any{"readOnly": yes}, `{"id":"s","custom":{}}`, "/annotations/readOnly", false},
		{"http GET read-only", map[string]any{"readOnly": yes, "openWorld": yes}, `{"id":"s","http":{"method":"GET","url":"https://example.com"}}`, "", true},
		{"http default method read-only", map[string]any{"readOnly": yes}, `{"id":"s","http":{"url":"https://example.com"}}`, "", true},
		{"set closed world and read-only", map[string]any{"readOnly": yes, "openWorld": no}, `{"id":"s","sleep":{"duration":"1s"}}`, "", true},
		{"hook closed world", map[string]any{"openWorld": no}, `{"id":"s","hook":{"token":"t"}}`, "", true},
		{"POST not read-only said", map[string]any{"readOnly": no, "openWorld": yes}, `{"id":"s","http":{"method":"POST","url":"https://example.com"}}`, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := defWith(t, map[string]any{"annotations": tc.ann, "steps": []any{rawJSON(t, tc.step)}})
			if tc.valid {
				requireValid(t, doc)
				return
			}
			requireProblem(t, doc, tc.path, "cannot be")
		})
	}
}

// rawJSON decodes s for a test document.
func rawJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}
