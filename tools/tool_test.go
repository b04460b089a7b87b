package tools_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

func decode(t *testing.T, doc string) *schemas.Definition {
	t.Helper()
	def, err := schemas.Decode([]byte(doc))
	require.NoError(t, err)
	return def
}

func TestAnnotationsAreAlwaysExplicit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                                      string
		doc                                       string
		readOnly, destructive, idempotent, remote bool
	}{
		{"defaults without outside steps", `{"name":"a","input":{"type":"object"},"steps":[{"id":"s","set":1}]}`, false, true, false, false},
		{"http step reaches out", `{"name":"a","input":{"type":"object"},"steps":[{"id":"s","http":{"url":"http://x"}}]}`, false, true, false, true},
		{"start token is idempotent", `{"name":"a","input":{"type":"object"},"start":{"token":"t","onConflict":"adopt"},"steps":[{"id":"s","set":1}]}`, false, true, true, false},
		{"read-only is not destructive", `{"name":"a","input":{"type":"object"},"annotations":{"readOnly":true},"steps":[{"id":"s","set":1}]}`, true, false, true, false},
		{"definition wins", `{"name":"a","input":{"type":"object"},"start":{"token":"t"},"annotations":{"destructive":false,"idempotent":false,"openWorld":true},"steps":[{"id":"s","set":1}]}`, false, false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, err := tools.FromDefinition(decode(t, tc.doc))
			require.NoError(t, err)
			raw, err := json.Marshal(tool.Tool)
			require.NoError(t, err)
			var got struct {
				Annotations map[string]any `json:"annotations"`
			}
			require.NoError(t, json.Unmarshal(raw, &got))
			require.Equal(t, map[string]any{
				"readOnlyHint": tc.readOnly, "destructiveHint": tc.destructive,
				"idempotentHint": tc.idempotent, "openWorldHint": tc.remote,
			}, got.Annotations)
		})
	}
}

func TestToolShape(t *testing.T) {
	t.Parallel()
	def := decode(t, `{"name":"greet","title":"Greet","description":"Says hello.","input":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},"steps":[{"id":"s","set":1}]}`)
	tool, err := tools.FromDefinition(def)
	require.NoError(t, err)
	raw, err := json.Marshal(tool.Tool)
	require.NoError(t, err)
	var got struct {
		Name         string         `json:"name"`
		Title        string         `json:"title"`
		Description  string         `json:"description"`
		InputSchema  map[string]any `json:"inputSchema"`
		OutputSchema map[string]any `json:"outputSchema"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, "greet", got.Name)
	require.Equal(t, "Greet", got.Title)
	require.Equal(t, "Says hello.", got.Description)
	props := got.InputSchema["properties"].(map[string]any)
	require.Equal(t, map[string]any{"type": "string"}, props["name"])
	key := props[tools.KeyArgument].(map[string]any)
	require.Equal(t, []any{float64(1), float64(255)}, []any{key["minLength"], key["maxLength"]})
	require.Equal(t, []any{"name"}, got.InputSchema["required"])
	require.ElementsMatch(t, []string{"runId", "status", "output", "error", "replayed", "reused", "waitingOn"}, keys(got.OutputSchema["properties"].(map[string]any)))
	require.Equal(t, map[string]any{}, got.OutputSchema["properties"].(map[string]any)["output"], "no output schema: any output")

	input, err := schemas.CompileInput(tool.Tool.RawInputSchema)
	require.NoError(t, err)
	require.Empty(t, input.Validate(map[string]any{"name": "Ada", tools.KeyArgument: "k1"}))
	require.Len(t, input.Validate(map[string]any{tools.KeyArgument: ""}), 2)
}

func TestTypedOutput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, output string
		valid        string // a completed run's structuredContent the outputSchema accepts
		invalid      string // one it refuses
	}{
		{"object", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`,
			`{"runId":"r","status":"completed","output":{"message":"hi"},"replayed":false,"reused":true}`,
			`{"runId":"r","status":"completed","output":{"message":3}}`},
		{"local references", `{"$defs":{"msg":{"type":"string"}},"type":"object","properties":{"message":{"$ref":"#/$defs/msg"}}}`,
			`{"runId":"r","status":"completed","output":{"message":"hi"}}`,
			`{"runId":"r","status":"completed","output":{"message":3}}`},
		{"scalar", `{"type":"integer"}`,
			`{"runId":"r","status":"running"}`,
			`{"runId":"r","status":"completed","output":"three"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			def := decode(t, `{"name":"typed","input":{"type":"object"},"output":`+tc.output+`,"steps":[{"id":"s","set":1}]}`)
			tool, err := tools.FromDefinition(def)
			require.NoError(t, err)
			schema, err := schemas.CompileInput(tool.Tool.RawOutputSchema)
			require.NoError(t, err, "%s", tool.Tool.RawOutputSchema)
			require.Empty(t, schema.Validate(jsonValue(t, tc.valid)))
			require.NotEmpty(t, schema.Validate(jsonValue(t, tc.invalid)))
		})
	}
}

func jsonValue(t *testing.T, doc string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(doc), &v))
	return v
}

func TestResultOutputOnlyOnceCompleted(t *testing.T) {
	t.Parallel()
	running := tools.ResultOf(&runner.Run{ID: "r", Status: runner.StatusRunning})
	raw, err := json.Marshal(running)
	require.NoError(t, err)
	require.JSONEq(t, `{"runId":"r","status":"running"}`, string(raw))
	done := tools.ResultOf(&runner.Run{ID: "r", Status: runner.StatusCompleted})
	raw, err = json.Marshal(done)
	require.NoError(t, err)
	require.JSONEq(t, `{"runId":"r","status":"completed","output":null}`, string(raw))
}

// reused appears only on the answer that is the start token's owner (SPEC §6).
func TestResultReused(t *testing.T) {
	t.Parallel()
	run := &runner.Run{ID: "r", Status: runner.StatusWaiting}
	for reused, want := range map[bool]string{
		true:  `{"runId":"r","status":"waiting","replayed":false,"reused":true}`,
		false: `{"runId":"r","status":"waiting","replayed":false}`,
	} {
		raw, err := json.Marshal(tools.ResultOf(run).Replay(false).Reuse(reused))
		require.NoError(t, err)
		require.JSONEq(t, want, string(raw))
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	names := []string{"greet", "great-deal", "process-order", "gorunner_get_run", "gorunner_list_runs", "approval"}
	cases := []struct {
		name string
		want []string
	}{
		{"gret", []string{"greet"}},
		{"GREET", []string{"greet"}},
		{"gorunner_getrun", []string{"gorunner_get_run", "gorunner_list_runs"}},
		{"proces-order", []string{"process-order"}},
		{"approvals", []string{"approval"}},
		{"zzzzzzzz", []string{}},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, tools.Closest(tc.name, names), tc.name)
	}
}

// TestClosestHostileNameIsCheap: a name as long as a request may carry, against a large
// tool set, is answered at once with no suggestion (candidates far off in length are
// never compared), not after a megabyte-wide edit-distance table per candidate.
func TestClosestHostileNameIsCheap(t *testing.T) {
	t.Parallel()
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf("workflow-%d", i)
	}
	huge := strings.Repeat("w", 1<<20)
	done := make(chan []string, 1)
	go func() { done <- tools.Closest(huge, names) }()
	select {
	case got := <-done:
		require.Empty(t, got)
	case <-time.After(10 * time.Second):
		t.Fatal("Closest of a 1 MiB name took longer than 10 s")
	}
}

func TestFindRanksNameTitleTagsDescription(t *testing.T) {
	t.Parallel()
	var all []*tools.Tool
	for _, doc := range []string{
		`{"name":"send-invoice","title":"Send an invoice","description":"Emails a PDF invoice.","tags":["billing"],"input":{"type":"object"},"steps":[{"id":"s","set":1}]}`,
		`{"name":"refund","title":"Refund a payment","description":"Refunds an invoice's payment.","tags":["billing"],"input":{"type":"object"},"steps":[{"id":"s","set":1}]}`,
		`{"name":"greet","title":"Greet someone","description":"Builds a greeting.","input":{"type":"object"},"steps":[{"id":"s","set":1}]}`,
	} {
		tool, err := tools.FromDefinition(decode(t, doc))
		require.NoError(t, err)
		all = append(all, tool)
	}
	names := func(found []tools.Found) []string {
		out := []string{}
		for _, f := range found {
			out = append(out, f.Name)
		}
		return out
	}
	require.Equal(t, []string{"send-invoice", "refund"}, names(tools.Find(all, "invoice", "", 10)), "name beats description")
	require.Equal(t, []string{"greet"}, names(tools.Find(all, "greeting", "", 10)), "prefix matches")
	require.Equal(t, []string{"refund", "send-invoice"}, names(tools.Find(all, "billing refund", "", 10)))
	require.Equal(t, []string{"refund"}, names(tools.Find(all, "payment", "billing", 10)))
	require.Empty(t, tools.Find(all, "greet", "billing", 10), "the tag filters")
	require.Len(t, tools.Find(all, "invoice", "", 1), 1, "at most limit")
	found := tools.Find(all, "greet", "", 10)
	require.JSONEq(t, `{"type":"object"}`, string(found[0].InputSchema))
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestInputSchemaRefusesATakenKeyProperty(t *testing.T) {
	t.Parallel()
	_, err := tools.InputSchema(json.RawMessage(`{"type":"object","properties":{"idempotencyKey":{"type":"string"}}}`))
	require.ErrorContains(t, err, "idempotencyKey")
}

func TestCallKeyProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, raw, problem string
	}{
		{"no key", `{}`, ""},
		{"empty key", `{"idempotencyKey":""}`, "minLength: got 0, want 1"},
		{"shortest key", `{"idempotencyKey":"k"}`, ""},
		{"longest key", `{"idempotencyKey":"` + strings.Repeat("é", 255) + `"}`, ""},
		{"key too long", `{"idempotencyKey":"` + strings.Repeat("é", 256) + `"}`, "maxLength: got 256, want 255"},
		{"key not a string", `{"idempotencyKey":3}`, "got number, want string"},
		{"null key", `{"idempotencyKey":null}`, "got null, want string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, problems := tools.ParseCall(json.RawMessage(tc.raw))
			require.Empty(t, problems)
			if tc.problem == "" {
				require.Nil(t, c.KeyProblems())
				return
			}
			require.Equal(t, []schemas.Problem{{Path: "/idempotencyKey", Message: tc.problem}}, c.KeyProblems())
		})
	}
}

func TestParseCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		raw     string
		key     string
		hasKey  bool
		input   string
		problem string
	}{
		{"absent arguments", ``, "", false, `{}`, ""},
		{"no key: the input as sent", ` {"b": 1, "a": 2} `, "", false, `{"b": 1, "a": 2}`, ""},
		{"key split off", `{"b":1,"idempotencyKey":"k","a":12345678901234567890}`, "k", true, `{"a":12345678901234567890,"b":1}`, ""},
		{"not an object", `[1]`, "", false, "", ""},
		{"key not a string: split off, its problem is KeyProblems'", `{"idempotencyKey":3,"a":1}`, "", true, `{"a":1}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, problems := tools.ParseCall(json.RawMessage(tc.raw))
			if tc.input == "" {
				require.Len(t, problems, 1)
				require.Equal(t, tc.problem, problems[0].Path)
				return
			}
			require.Empty(t, problems)
			require.Equal(t, tc.key, c.Key)
			require.Equal(t, tc.hasKey, c.HasKey)
			require.JSONEq(t, tc.input, string(c.Input))
			require.Equal(t, tc.input, string(c.Input))
		})
	}
}
