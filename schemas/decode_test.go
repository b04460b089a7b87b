package schemas

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

const minimalJSON = `{"name": "wf", "input": {"type": "object"}, "steps": [{"id": "a", "set": 1}]}`

func TestDecodeSpecExample(t *testing.T) {
	t.Parallel()
	d, err := Decode(readTestdata(t, "process-order.yaml"))
	require.NoError(t, err)
	require.Equal(t, "process-order", d.Name)
	require.Equal(t, 30*time.Second, d.ToolTimeout.Std())
	require.Len(t, d.Steps, 3)
	require.Equal(t, KindHook, d.Steps[0].Kind())
	require.Equal(t, 24*time.Hour, d.Steps[0].Hook.Timeout.Std())
	require.Equal(t, "POST", d.Steps[1].HTTP.Method)
	require.Equal(t, 5, d.Steps[1].Retry.MaxAttempts)
	require.Equal(t, time.Minute, d.Steps[1].Retry.MaxInterval.Std())
	require.Equal(t, map[string]any{"status": "processed"}, d.Steps[2].Set.Value)
	require.Equal(t, "${{ steps.done.output }}", d.Result)
	require.True(t, *d.Annotations.Destructive)
	require.JSONEq(t, `{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}`, string(d.Input))
}

func TestDecodeStepKinds(t *testing.T) {
	t.Parallel()
	d, err := Decode([]byte(`{"name":"wf","input":{"type":"object"},"steps":[
		{"id":"a","set":null},
		{"id":"b","mine":{"x":1}},
		{"id":"c"},
		{"id":"d","set":1,"http":{"url":"u"}}]}`))
	require.NoError(t, err)
	require.NotNil(t, d.Steps[0].Set)
	require.Nil(t, d.Steps[0].Set.Value)
	require.Equal(t, KindSet, d.Steps[0].Kind())
	require.Equal(t, "mine", d.Steps[1].Kind())
	require.JSONEq(t, `{"x":1}`, string(d.Steps[1].Custom["mine"]))
	require.Equal(t, "", d.Steps[2].Kind())
	require.Equal(t, []string{KindSet, KindHTTP}, d.Steps[3].Kinds())
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		path string
		msg  string
	}{
		{"unknown top-level field", `{"name":"wf","nmae":"x"}`, "/nmae", `unknown field "nmae"`},
		{"unknown retry field", `{"steps":[{"id":"a","set":1,"retry":{"maxAttempt":3}}]}`, "/steps/0/retry/maxAttempt", "unknown field"},
		{"unknown annotations field", `{"annotations":{"readonly":true}}`, "/annotations/readonly", "unknown field"},
		{"unknown start field", `{"start":{"token":"t","policy":"x"}}`, "/start/policy", "unknown field"},
		{"unknown http field", `{"steps":[{"id":"a","http":{"url":"u","header":{}}}]}`, "/steps/0/http/header", "unknown field"},
		{"unknown hook field", `{"steps":[{"id":"a","hook":{"token":"t","tmeout":"1s"}}]}`, "/steps/0/hook/tmeout", "unknown field"},
		{"unknown sleep field", `{"steps":[{"id":"a","sleep":{"for":"1s"}}]}`, "/steps/0/sleep/for", "unknown field"},
		{"unknown run field", `{"steps":[{"id":"a","run":{"action":"status","id":"x"}}]}`, "/steps/0/run/id", "unknown field"},
		{"unknown workflow field", `{"steps":[{"id":"a","workflow":{"name":"x","args":{}}}]}`, "/steps/0/workflow/args", "unknown field"},
		{"unknown fail field", `{"steps":[{"id":"a","fail":{"message":"m","reason":"r"}}]}`, "/steps/0/fail/reason", "unknown field"},
		{"name not a string", `{"name":1}`, "/name", "must be a string"},
		{"steps not an array", `{"steps":{}}`, "/steps", "must be an array"},
		{"step not an object", `{"steps":[1]}`, "/steps/0", "must be an object"},
		{"maxAttempts not an integer", `{"steps":[{"id":"a","set":1,"retry":{"maxAttempts":1.5}}]}`, "/steps/0/retry/maxAttempts", "must be an integer"},
		{"bad duration", `{"toolTimeout":"soon"}`, "/toolTimeout", "invalid duration"},
		{"negative duration", `{"steps":[{"id":"a","set":1,"timeout":"-1s"}]}`, "/steps/0/timeout", "negative"},
		{"duration not a string", `{"steps":[{"id":"a","hook":{"token":"t","timeout":5}}]}`, "/steps/0/hook/timeout", "must be a string"},
		{"header not a string", `{"steps":[{"id":"a","http":{"url":"u","headers":{"X":1}}}]}`, "/steps/0/http/headers/X", "must be a string"},
		{"annotation not a bool", `{"annotations":{"readOnly":"yes"}}`, "/annotations/readOnly", "must be a boolean"},
		{"duplicate key", `{"name":"a","name":"b"}`, "/name", "duplicate key"},
		{"duplicate nested key", `{"steps":[{"id":"a","set":{"x":1,"x":2}}]}`, "/steps/0/set/x", "duplicate key"},
		{"trailing data", `{"name":"a"} {}`, "", "after the document"},
		{"broken JSON", `{"name":`, "/name", "invalid JSON"},
		{"escaped key path", `{"steps":[{"id":"a","http":{"url":"u","headers":{"a/b~":1}}}]}`, "/steps/0/http/headers/a~1b~0", "must be a string"},
		{"invalid UTF-8", "{\"name\":\"\xff\"}", "", "UTF-8"},
		{"yaml non-string key", "name: wf\nsteps:\n  - id: a\n    set:\n      1: one\n", "/steps/0/set", "not a string"},
		{"yaml bool key", "name: wf\ntrue: 1\n", "", "not a string"},
		{"yaml unknown field", "name: wf\nstep: []\n", "/step", "unknown field"},
		{"yaml two documents", "name: a\n---\nname: b\n", "", "one YAML document"},
		{"yaml syntax", "name: [a\n", "", "invalid YAML"},
		{"yaml empty", "\n", "", "empty"},
		{"yaml not a mapping", "- a\n- b\n", "", "must be an object"},
		{"yaml infinity", "name: wf\nresult: .inf\n", "/result", "infinity"},
		{"deep nesting", `{"result":` + deepArray(MaxDepth+1) + `}`, "/result" + deepPath(MaxDepth-1), "nested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode([]byte(tc.doc))
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, tc.path, de.Path)
			require.Contains(t, de.Message, tc.msg)
		})
	}
}

func deepArray(n int) string {
	out := ""
	for range n {
		out = "[" + out + "]"
	}
	return out
}

func deepPath(n int) string {
	out := ""
	for range n {
		out += "/0"
	}
	return out
}

func TestDecodeYAMLValues(t *testing.T) {
	t.Parallel()
	doc := "name: wf\ninput: {type: object}\nsteps:\n  - id: a\n    set:\n      when: 2030-01-02T15:04:05Z\n      n: 12\n      f: 1.5\n      ok: yes\n"
	d, err := Decode([]byte(doc))
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"when": "2030-01-02T15:04:05Z", "n": json.Number("12"), "f": json.Number("1.5"), "ok": "yes",
	}, d.Steps[0].Set.Value)
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"process-order.yaml", "every-kind.json"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, err := Decode(readTestdata(t, name))
			require.NoError(t, err)
			data, err := Marshal(d)
			require.NoError(t, err)
			again, err := Decode(data)
			require.NoError(t, err)
			require.Equal(t, d, again)
			second, err := Marshal(again)
			require.NoError(t, err)
			require.Equal(t, string(data), string(second))
		})
	}
}

func TestRoundTripCustomKindAndSetNull(t *testing.T) {
	t.Parallel()
	d, err := Decode([]byte(`{"name":"wf","input":{"type":"object"},"steps":[{"id":"a","set":null},{"id":"b","mine":{"q":"<&>"},"if":"x"}]}`))
	require.NoError(t, err)
	data, err := Marshal(d)
	require.NoError(t, err)
	require.Contains(t, string(data), `{"id":"a","set":null}`)
	again, err := Decode(data)
	require.NoError(t, err)
	require.Equal(t, d, again)
}

func TestStepUnmarshalJSONIsStrict(t *testing.T) {
	t.Parallel()
	var s Step
	err := json.Unmarshal([]byte(`{"id":"a","http":{"url":"u","methd":"GET"}}`), &s)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	require.Equal(t, "/http/methd", de.Path)
}

func TestCanonicalAndHash(t *testing.T) {
	t.Parallel()
	a, err := Decode([]byte(minimalJSON))
	require.NoError(t, err)
	b, err := Decode([]byte("steps:\n  - set: 1.0\n    id: a\ninput: {type: object}\nname: wf\n"))
	require.NoError(t, err)
	ca, err := Canonical(a)
	require.NoError(t, err)
	require.Equal(t, `{"input":{"type":"object"},"name":"wf","steps":[{"id":"a","set":1}]}`, string(ca))
	ha, err := Hash(a)
	require.NoError(t, err)
	hb, err := Hash(b)
	require.NoError(t, err)
	require.Equal(t, ha, hb)
	require.Len(t, ha, 64)
	b.Name = "other"
	hc, err := Hash(b)
	require.NoError(t, err)
	require.NotEqual(t, ha, hc)
}
