package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/redisstore/redistest"
)

// backends runs test once on each store backend: SQLite (the harness's file) and Redis
// (when GORUNNER_TEST_REDIS names one), each with an engine of its own.
func backends(t *testing.T, test func(t *testing.T, h *harness, e *runner.Engine)) {
	storeBackends(t, func(t *testing.T, h *harness, s runner.Store, cfg runner.Config) {
		test(t, h, h.engine(cfg, s))
	})
}

// storeBackends runs test on SQLite and on Redis, given the store and the config an engine
// on it takes (its events bus).
func storeBackends(t *testing.T, test func(t *testing.T, h *harness, s runner.Store, cfg runner.Config)) {
	t.Run("sqlite", func(t *testing.T) {
		h := newHarness(t)
		test(t, h, h.store, runner.Config{})
	})
	t.Run("redis", func(t *testing.T) {
		h := newHarness(t)
		s, _, _ := redistest.Open(t)
		bus := events.New(s.Events(), nil)
		require.NoError(t, bus.Start(context.Background()))
		t.Cleanup(func() { require.NoError(t, bus.Stop(context.Background())) })
		test(t, h, s, runner.Config{Events: bus})
	})
}

// record is the record of run r at path.
func record(r *runner.Run, path string) *runner.StepRecord {
	for _, s := range r.Steps {
		if s.Path == path || (s.Path == "" && s.ID == path) {
			return s
		}
	}
	return nil
}

// flowCase is one run of a definition with control flow and what it must end with.
type flowCase struct {
	name   string
	steps  string // the definition's steps (and more top-level fields), YAML
	input  string
	status runner.Status
	output string // JSON; checked when set
	code   string // the run error's code, when it failed
	at     string // the path the run error names
	// records are statuses of records by path.
	records map[string]runner.StepStatus
}

var flowCases = []flowCase{
	{name: "parallel", steps: `
steps:
  - { id: first, set: 1 }
  - id: quotes
    parallel:
      branches:
        - { id: fedex, steps: [{ id: ask, set: "${{ steps.first.output + 1 }}" }] }
        - { id: ups, steps: [{ id: ask, set: 10 }, { id: twice, set: "${{ steps.ask.output * 2 }}" }] }
  - { id: best, set: "${{ steps.quotes.output }}" }`,
		status: runner.StatusCompleted, output: `{"fedex":2,"ups":20}`,
		records: map[string]runner.StepStatus{"quotes/fedex/ask": runner.StepCompleted, "quotes/ups/twice": runner.StepCompleted, "quotes": runner.StepCompleted}},
	{name: "parallel fails fast", steps: `
steps:
  - id: p
    parallel:
      branches:
        - { id: a, steps: [{ id: bad, fail: { message: no, code: NOPE } }] }
        - { id: b, steps: [{ id: ok, set: 1 }] }`,
		status: runner.StatusFailed, code: "NOPE", at: "p/a/bad",
		records: map[string]runner.StepStatus{"p/a/bad": runner.StepFailed, "p": runner.StepFailed}},
	{name: "parallel without failFast runs every branch", steps: `
steps:
  - id: p
    parallel:
      failFast: false
      branches:
        - { id: a, steps: [{ id: bad, fail: { message: no } }] }
        - { id: b, steps: [{ id: ok, set: 1 }] }`,
		status: runner.StatusFailed, code: runner.CodeFailed, at: "p/a/bad",
		records: map[string]runner.StepStatus{"p/b/ok": runner.StepCompleted}},
	{name: "foreach", steps: `
steps:
  - id: each
    foreach:
      items: "${{ input.orders }}"
      as: order
      steps:
        - { id: charge, set: { id: "${{ order.id }}", at: "${{ index }}" } }
        - { id: done, set: "${{ steps.charge.output.id }}-${{ steps.charge.output.at }}" }`,
		input: `{"orders":[{"id":"a"},{"id":"b"},{"id":"c"}]}`, status: runner.StatusCompleted, output: `["a-0","b-1","c-2"]`,
		records: map[string]runner.StepStatus{"each/0/charge": runner.StepCompleted, "each/2/done": runner.StepCompleted}},
	{name: "foreach at concurrency 4", steps: `
steps:
  - id: each
    foreach:
      items: [0, 1, 2, 3, 4, 5]
      concurrency: 4
      steps:
        - { id: a, set: "${{ item * 10 }}" }
        - { id: b, set: "${{ steps.a.output + index }}" }`,
		status: runner.StatusCompleted, output: `[0,11,22,33,44,55]`},
	{name: "foreach at concurrency 3 with a failed iteration", steps: `
steps:
  - id: each
    foreach:
      items: [0, 1, 2, 3, 4]
      concurrency: 3
      steps:
        - { id: check, if: "${{ item == 3 }}", fail: { message: three, code: THREE } }`,
		status: runner.StatusFailed, code: "THREE", at: "each/3/check",
		records: map[string]runner.StepStatus{"each/3/check": runner.StepFailed, "each": runner.StepFailed}},
	{name: "foreach over nothing", steps: `
steps:
  - { id: each, foreach: { items: [], steps: [{ id: x, set: 1 }] } }`,
		status: runner.StatusCompleted, output: `[]`},
	{name: "foreach items not an array", steps: `
steps:
  - { id: each, foreach: { items: "${{ input.n }}", steps: [{ id: x, set: 1 }] } }`,
		input: `{"n":3}`, status: runner.StatusFailed, code: runner.CodeInvalidItems, at: "each"},
	{name: "foreach past MaxIterations", steps: `
steps:
  - { id: each, foreach: { items: "${{ input.many }}", steps: [{ id: x, set: 1 }] } }`,
		input: `{"many":[` + strings.TrimSuffix(strings.Repeat("0,", 1001), ",") + `]}`, status: runner.StatusFailed, code: runner.CodeTooManyItems, at: "each"},
	{name: "loop", steps: `
steps:
  - id: poll
    loop:
      until: "${{ steps.check.output >= 2 }}"
      maxIterations: 5
      steps:
        - { id: check, set: "${{ iteration }}" }`,
		status: runner.StatusCompleted, output: `2`,
		records: map[string]runner.StepStatus{"poll/0/check": runner.StepCompleted, "poll/2/check": runner.StepCompleted}},
	{name: "loop limit", steps: `
steps:
  - { id: poll, loop: { until: "${{ false }}", maxIterations: 3, steps: [{ id: check, set: 1 }] } }`,
		status: runner.StatusFailed, code: runner.CodeLoopLimit, at: "poll",
		records: map[string]runner.StepStatus{"poll/2/check": runner.StepCompleted}},
	{name: "onError continue", steps: `
steps:
  - { id: bad, onError: continue, fail: { message: broken, code: BROKEN } }
  - { id: after, set: { code: "${{ steps.bad.error.code }}", out: "${{ steps.bad.output }}" } }`,
		status: runner.StatusCompleted, output: `{"code":"BROKEN","out":null}`,
		records: map[string]runner.StepStatus{"bad": runner.StepFailed}},
	{name: "onError continue in an iteration", steps: `
steps:
  - id: each
    foreach:
      items: [1, 2]
      steps:
        - { id: maybe, onError: continue, if: "${{ item == 2 }}", fail: { message: two } }
        - { id: out, set: "${{ steps.maybe.error.message }}" }`,
		status: runner.StatusCompleted, output: `[null,"two"]`},
	{name: "onError continue on a compound step", steps: `
steps:
  - id: each
    onError: continue
    foreach:
      items: [1, 2, 3]
      steps:
        - { id: check, if: "${{ item == 2 }}", fail: { message: "no ${{ item }}" } }
        - { id: v, set: "${{ item }}" }
  - { id: after, set: { out: "${{ steps.each.output }}", err: "${{ steps.each.error.message }}" } }`,
		status: runner.StatusCompleted, output: `{"err":"no 2","out":[1,null,null]}`,
		records: map[string]runner.StepStatus{"each": runner.StepFailed, "each/1/check": runner.StepFailed}},
	{name: "foreach inside parallel", steps: `
steps:
  - id: p
    parallel:
      branches:
        - { id: a, steps: [{ id: each, foreach: { items: [1, 2], steps: [{ id: x, set: "${{ item * 2 }}" }] } }] }
        - { id: b, steps: [{ id: y, set: b }] }`,
		status: runner.StatusCompleted, output: `{"a":[2,4],"b":"b"}`,
		records: map[string]runner.StepStatus{"p/a/each/1/x": runner.StepCompleted}},
	{name: "loop inside foreach", steps: `
steps:
  - id: each
    foreach:
      items: [1, 3]
      steps:
        - id: count
          loop:
            until: "${{ steps.c.output >= item }}"
            maxIterations: 5
            steps: [{ id: c, set: "${{ iteration + 1 }}" }]`,
		status: runner.StatusCompleted, output: `[1,3]`,
		records: map[string]runner.StepStatus{"each/1/count/2/c": runner.StepCompleted}},
	{name: "skipped compound step", steps: `
steps:
  - { id: each, if: "${{ false }}", foreach: { items: [1], steps: [{ id: x, set: 1 }] } }
  - { id: after, set: "${{ steps.each.output }}" }`,
		status: runner.StatusCompleted, output: `null`,
		records: map[string]runner.StepStatus{"each": runner.StepSkipped}},
}

func TestFlowConstructs(t *testing.T) {
	backends(t, func(t *testing.T, h *harness, e *runner.Engine) {
		for _, tc := range flowCases {
			t.Run(tc.name, func(t *testing.T) {
				name := h.define("name: " + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-") + "\ninput: { type: object }\n" + tc.steps)
				input := tc.input
				if input == "" {
					input = `{}`
				}
				r := h.run(e, name, input, tc.status)
				if tc.output != "" {
					require.JSONEq(t, tc.output, string(r.Output))
				}
				if tc.code != "" {
					require.Equal(t, tc.code, r.Error.Code, r.Error.Message)
					require.Equal(t, tc.at, r.Error.Step)
				}
				for path, status := range tc.records {
					rec := record(r, path)
					require.NotNil(t, rec, path)
					require.Equal(t, status, rec.Status, path)
				}
				for _, rec := range r.Steps {
					if rec.Path != "" {
						require.Equal(t, uuid.NewSHA1(stepNamespace, []byte(r.ID+"\x00"+rec.Path)).String(), rec.StepID, rec.Path)
					}
				}
				// What the engine answered is what the store keeps.
				stored, err := e.Get(context.Background(), r.ID)
				require.NoError(t, err)
				require.Equal(t, len(r.Steps), len(stored.Steps))
				for i := range r.Steps {
					require.Equal(t, r.Steps[i].Path, stored.Steps[i].Path)
					require.Equal(t, r.Steps[i].Status, stored.Steps[i].Status)
				}
			})
		}
	})
}

// stepNamespace is the engine's namespace of stepIds (runner.stepNamespace).
var stepNamespace = uuid.MustParse("6f6a2b4e-3c1d-4e55-9a0b-8d8f3f1d2c7a")
