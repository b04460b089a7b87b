package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// defWith returns a valid definition document with the top-level fields in over replaced
// (a nil value removes the field).
func defWith(t *testing.T, over map[string]any) []byte {
	t.Helper()
	doc := map[string]any{
		"name":  "wf",
		"input": map[string]any{"type": "object", "properties": map[string]any{"orderId": map[string]any{"type": "string"}}},
		"steps": []any{map[string]any{"id": "first", "set": "x"}},
	}
	for k, v := range over {
		if v == nil {
			delete(doc, k)
			continue
		}
		doc[k] = v
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	return data
}

// stepsWith returns a valid definition whose steps are the first step followed by steps.
func stepsWith(t *testing.T, steps ...string) []byte {
	t.Helper()
	all := []any{map[string]any{"id": "first", "set": "x"}}
	for _, s := range steps {
		var v any
		require.NoError(t, json.Unmarshal([]byte(s), &v))
		all = append(all, v)
	}
	return defWith(t, map[string]any{"steps": all})
}

func TestValidateValid(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"process-order.yaml", "every-kind.json"} {
		d, err := Decode(readTestdata(t, name))
		require.NoError(t, err)
		require.Empty(t, Validate(d, ValidateOptions{}), name)
	}
	d, err := Decode(stepsWith(t, `{"id":"mine","custom":{"a":1}}`))
	require.NoError(t, err)
	require.Empty(t, Validate(d, ValidateOptions{CustomKinds: map[string]bool{"custom": true}}))
}

func TestValidateProblems(t *testing.T) {
	t.Parallel()
	many := make([]any, MaxSteps+1)
	for i := range many {
		many[i] = map[string]any{"id": fmt.Sprintf("s%d", i), "set": 1}
	}
	tests := []struct {
		name string
		doc  []byte
		path string
		msg  string
	}{
		{"name missing", defWith(t, map[string]any{"name": nil}), "/name", "required"},
		{"name pattern", defWith(t, map[string]any{"name": "Bad Name"}), "/name", "must match"},
		{"name too long", defWith(t, map[string]any{"name": strings.Repeat("a", 65)}), "/name", "must match"},
		{"name reserved", defWith(t, map[string]any{"name": "gorunner_list"}), "/name", "reserved"},
		{"input missing", defWith(t, map[string]any{"input": nil}), "/input", "required"},
		{"input not object", defWith(t, map[string]any{"input": map[string]any{"type": "string"}}), "/input/type", "type: object"},
		{"input invalid schema", defWith(t, map[string]any{"input": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "strng"}}}}), "/input/properties/a/type", ""},
		{"input remote ref", defWith(t, map[string]any{"input": map[string]any{"type": "object", "$ref": "https://example.com/s.json"}}), "/input", "not supported"},
		{"input idempotencyKey", defWith(t, map[string]any{"input": map[string]any{"type": "object", "properties": map[string]any{"idempotencyKey": map[string]any{"type": "string"}}}}), "/input/properties/idempotencyKey", "reserved"},
		{"output invalid schema", defWith(t, map[string]any{"output": map[string]any{"minimum": "zero"}}), "/output/minimum", ""},
		{"output not a schema", defWith(t, map[string]any{"output": 5}), "/output", ""},
		{"tag pattern", defWith(t, map[string]any{"tags": []string{"billing", "Bad Tag"}}), "/tags/1", "must match"},
		{"tag repeated", defWith(t, map[string]any{"tags": []string{"billing", "billing"}}), "/tags/1", "repeated"},
		{"too many tags", defWith(t, map[string]any{"tags": strings.Split("a b c d e f g h i j k l m n o p q", " ")}), "/tags", "at most 16"},
		{"no steps", defWith(t, map[string]any{"steps": []any{}}), "/steps", "at least one"},
		{"too many steps", defWith(t, map[string]any{"steps": many}), "/steps", "at most 1000"},
		{"duplicate step id", stepsWith(t, `{"id":"first","set":1}`), "/steps/1/id", "already used"},
		{"step id missing", stepsWith(t, `{"set":1}`), "/steps/1/id", "required"},
		{"step id pattern", stepsWith(t, `{"id":"Bad.Id","set":1}`), "/steps/1/id", "must match"},
		{"no kind", stepsWith(t, `{"id":"a"}`), "/steps/1", "no kind"},
		{"unknown kind", stepsWith(t, `{"id":"a","htpp":{}}`), "/steps/1/htpp", "unknown step kind"},
		{"two kinds", stepsWith(t, `{"id":"a","set":1,"fail":{"message":"m"}}`), "/steps/1", "exactly one"},
		{"http url missing", stepsWith(t, `{"id":"a","http":{"method":"GET"}}`), "/steps/1/http/url", "url is required"},
		{"http url not absolute", stepsWith(t, `{"id":"a","http":{"url":"/relative"}}`), "/steps/1/http/url", "absolute"},
		{"http bad method", stepsWith(t, `{"id":"a","http":{"url":"https://x","method":"FETCH"}}`), "/steps/1/http/method", "must be one of"},
		{"http header expression", stepsWith(t, `{"id":"a","http":{"url":"https://x","headers":{"X":"${{ ( }}"}}}`), "/steps/1/http/headers/X", "expression"},
		{"http query expression", stepsWith(t, `{"id":"a","http":{"url":"https://x","query":{"q":"${{ nope }}"}}}`), "/steps/1/http/query/q", "unknown name"},
		{"http body expression", stepsWith(t, `{"id":"a","http":{"url":"https://x","body":{"a":["${{ 1 + }}"]}}}`), "/steps/1/http/body/a/0", "expression"},
		{"http url expression", stepsWith(t, `{"id":"a","http":{"url":"https://x/${{ input. }}"}}`), "/steps/1/http/url", "expression"},
		{"hook token missing", stepsWith(t, `{"id":"a","hook":{}}`), "/steps/1/hook/token", "token is required"},
		{"hook onConflict", stepsWith(t, `{"id":"a","hook":{"token":"t","onConflict":"ignore"}}`), "/steps/1/hook/onConflict", "must be one of"},
		{"hook token expression", stepsWith(t, `{"id":"a","hook":{"token":"${{ }}"}}`), "/steps/1/hook/token", "empty expression"},
		{"hook payload expression", stepsWith(t, `{"id":"a","hook":{"token":"t","payload":"${{ * }}"}}`), "/steps/1/hook/payload", "expression"},
		{"sleep neither", stepsWith(t, `{"id":"a","sleep":{}}`), "/steps/1/sleep", "needs a duration or an until"},
		{"sleep both", stepsWith(t, `{"id":"a","sleep":{"duration":"1s","until":"2030-01-01T00:00:00Z"}}`), "/steps/1/sleep", "not both"},
		{"sleep until not a time", stepsWith(t, `{"id":"a","sleep":{"until":"tomorrow"}}`), "/steps/1/sleep/until", "RFC 3339"},
		{"sleep until expression", stepsWith(t, `{"id":"a","sleep":{"until":"${{ input.x ++ }}"}}`), "/steps/1/sleep/until", "expression"},
		{"run action missing", stepsWith(t, `{"id":"a","run":{"runId":"r"}}`), "/steps/1/run/action", "required"},
		{"run action unknown", stepsWith(t, `{"id":"a","run":{"action":"pause","runId":"r"}}`), "/steps/1/run/action", "must be one of"},
		{"run runId missing", stepsWith(t, `{"id":"a","run":{"action":"cancel"}}`), "/steps/1/run/runId", "runId is required"},
		{"run token on status", stepsWith(t, `{"id":"a","run":{"action":"status","runId":"r","token":"t"}}`), "/steps/1/run/token", "only for action resume"},
		{"run payload on result", stepsWith(t, `{"id":"a","run":{"action":"result","runId":"r","payload":1}}`), "/steps/1/run/payload", "only for action resume"},
		{"run resume token missing", stepsWith(t, `{"id":"a","run":{"action":"resume"}}`), "/steps/1/run/token", "token is required"},
		{"run resume with runId", stepsWith(t, `{"id":"a","run":{"action":"resume","token":"t","runId":"r"}}`), "/steps/1/run/runId", "not used"},
		{"run runId expression", stepsWith(t, `{"id":"a","run":{"action":"status","runId":"${{ ) }}"}}`), "/steps/1/run/runId", "expression"},
		{"run payload expression", stepsWith(t, `{"id":"a","run":{"action":"resume","token":"t","payload":{"x":"${{ ( }}"}}}`), "/steps/1/run/payload/x", "expression"},
		{"workflow name missing", stepsWith(t, `{"id":"a","workflow":{}}`), "/steps/1/workflow/name", "name is required"},
		{"workflow name pattern", stepsWith(t, `{"id":"a","workflow":{"name":"Not A Name"}}`), "/steps/1/workflow/name", "must match"},
		{"workflow input expression", stepsWith(t, `{"id":"a","workflow":{"name":"x","input":"${{ [ }}"}}`), "/steps/1/workflow/input", "expression"},
		{"fail message missing", stepsWith(t, `{"id":"a","fail":{"code":"X"}}`), "/steps/1/fail/message", "message is required"},
		{"fail message expression", stepsWith(t, `{"id":"a","fail":{"message":"${{ ! }}"}}`), "/steps/1/fail/message", "expression"},
		{"set expression", stepsWith(t, `{"id":"a","set":{"k":"${{ 1 + }}"}}`), "/steps/1/set/k", "expression"},
		{"if expression", stepsWith(t, `{"id":"a","if":"${{ && }}","set":1}`), "/steps/1/if", "expression"},
		{"unknown step ref", stepsWith(t, `{"id":"a","set":"${{ steps.ghost.output }}"}`), "/steps/1/set", `no step "ghost"`},
		{"self ref", stepsWith(t, `{"id":"a","set":"${{ steps.a.output }}"}`), "/steps/1/set", "only earlier steps"},
		{"later ref", stepsWith(t, `{"id":"a","if":"${{ steps.b.output }}","set":1}`, `{"id":"b","set":1}`), "/steps/1/if", "only earlier steps"},
		{"result expression", defWith(t, map[string]any{"result": "${{ steps. }}"}), "/result", "expression"},
		{"result unknown ref", defWith(t, map[string]any{"result": `${{ steps["nope"].output }}`}), "/result", `no step "nope"`},
		{"start token missing", defWith(t, map[string]any{"start": map[string]any{"onConflict": "adopt"}}), "/start/token", "required"},
		{"start token expression", defWith(t, map[string]any{"start": map[string]any{"token": "${{ input. }}"}}), "/start/token", "expression"},
		{"start token reads steps", defWith(t, map[string]any{"start": map[string]any{"token": "${{ steps.first.output }}"}}), "/start/token", "not steps"},
		{"start onConflict", defWith(t, map[string]any{"start": map[string]any{"token": "t", "onConflict": "wait"}}), "/start/onConflict", "must be one of"},
		{"retry maxAttempts", stepsWith(t, `{"id":"a","set":1,"retry":{"maxAttempts":101}}`), "/steps/1/retry/maxAttempts", "between 1 and 100"},
		{"retry negative attempts", stepsWith(t, `{"id":"a","set":1,"retry":{"maxAttempts":-1}}`), "/steps/1/retry/maxAttempts", "between 1 and 100"},
		{"retry max below initial", stepsWith(t, `{"id":"a","set":1,"retry":{"initialInterval":"1m","maxInterval":"1s"}}`), "/steps/1/retry/maxInterval", "must not be less"},
		{"retry backoff below 1", stepsWith(t, `{"id":"a","set":1,"retry":{"backoffCoefficient":0.5}}`), "/steps/1/retry/backoffCoefficient", "at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := Decode(tc.doc)
			require.NoError(t, err)
			problems := Validate(d, ValidateOptions{})
			require.NotEmpty(t, problems)
			var found bool
			for _, p := range problems {
				if p.Path == tc.path && strings.Contains(p.Message, tc.msg) {
					found = true
				}
			}
			require.True(t, found, "want %s %q in %+v", tc.path, tc.msg, problems)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	d, err := Decode([]byte(`{"name":"Bad","input":{"type":"array"},"steps":[
		{"id":"a"},
		{"id":"a","http":{}},
		{"id":"c","fail":{"message":"${{ steps.d.output }}"}}]}`))
	require.NoError(t, err)
	var paths []string
	for _, p := range Validate(d, ValidateOptions{}) {
		paths = append(paths, p.Path)
	}
	require.Equal(t, []string{"/name", "/input/type", "/steps/1/id", "/steps/0", "/steps/1/http/url", "/steps/2/fail/message"}, paths)
}

func TestParseAndValidationError(t *testing.T) {
	t.Parallel()
	_, problems, err := Parse([]byte(`{"name": 5}`), ValidateOptions{})
	require.Error(t, err)
	require.Nil(t, problems)

	d, problems, err := Parse([]byte(`{"name":"wf","input":{"type":"object"},"steps":[]}`), ValidateOptions{})
	require.NoError(t, err)
	require.Equal(t, "wf", d.Name)
	verr := &ValidationError{Problems: problems}
	require.Equal(t, "/steps: at least one step is required", verr.Error())
	verr.Problems = append(verr.Problems, Problem{Path: "/x", Message: "y"})
	require.Contains(t, verr.Error(), "and 1 more")
}
