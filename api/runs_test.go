package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// published creates and publishes the greet definition under name.
func (e *env) published(name string) {
	e.t.Helper()
	e.create(name)
	a := e.do("POST", "/api/workflows/"+name+"/publish", nil)
	require.Equal(e.t, http.StatusCreated, a.Status, string(a.Raw))
}

func TestRunRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.published("r-greet")
	e.create("r-draft")

	a := e.do("POST", "/api/workflows/r-greet/run", map[string]any{"name": "Ada"})
	require.Equal(t, http.StatusAccepted, a.Status, string(a.Raw))
	run := a.data()
	require.Contains(t, []any{"pending", "running", "completed"}, run["status"])
	id := run["id"].(string)

	got := e.do("GET", "/api/runs/"+id+"?wait=30s", nil)
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, "completed", got.data()["status"], string(got.Raw))
	require.Equal(t, map[string]any{"message": "Hello, Ada!"}, got.data()["output"])
	steps := got.data()["steps"].([]any)
	require.Len(t, steps, 1)
	require.NotEmpty(t, steps[0].(map[string]any)["stepId"])

	bad := e.do("POST", "/api/workflows/r-greet/run", map[string]any{"name": 7})
	require.Equal(t, http.StatusBadRequest, bad.Status)
	require.Equal(t, "VALIDATION_ERROR", bad.errorCode())
	details := bad.Body["error"].(map[string]any)["details"].([]any)
	require.Equal(t, "/name", details[0].(map[string]any)["path"])

	missing := e.do("POST", "/api/workflows/r-greet/run", map[string]any{})
	require.Equal(t, http.StatusBadRequest, missing.Status, string(missing.Raw))

	notObject := e.do("POST", "/api/workflows/r-greet/run", `[1,2]`)
	require.Equal(t, http.StatusBadRequest, notObject.Status)

	require.Equal(t, http.StatusConflict, e.do("POST", "/api/workflows/r-draft/run", map[string]any{"name": "x"}).Status, "no published version")
	require.Equal(t, http.StatusAccepted, e.do("POST", "/api/workflows/r-draft/run?environment=test", map[string]any{"name": "x"}).Status, "test runs the draft")
	require.Equal(t, http.StatusBadRequest, e.do("POST", "/api/workflows/r-greet/run?environment=staging", map[string]any{"name": "x"}).Status)
	require.Equal(t, http.StatusNotFound, e.do("POST", "/api/workflows/nope/run", map[string]any{}).Status)

	require.Equal(t, http.StatusConflict, e.do("POST", "/api/runs/"+id+"/cancel", nil).Status, "already finished")
	require.Equal(t, http.StatusNotFound, e.do("GET", "/api/runs/0190d5a0-0000-7000-8000-000000000000", nil).Status)

	rerun := e.do("POST", "/api/runs/"+id+"/rerun", nil)
	require.Equal(t, http.StatusAccepted, rerun.Status, string(rerun.Raw))
	require.Equal(t, id, rerun.data()["rerunOf"])
	require.NotEqual(t, id, rerun.data()["id"])

	list := e.do("GET", "/api/runs?workflow=r-greet&limit=1", nil)
	require.Equal(t, http.StatusOK, list.Status)
	require.Len(t, list.Body["data"], 1)
	require.NotEmpty(t, list.Body["nextCursor"])
	next := e.do("GET", "/api/runs?workflow=r-greet&limit=1&cursor="+list.Body["nextCursor"].(string), nil)
	require.Len(t, next.Body["data"], 1)
	require.NotEqual(t, list.Body["data"], next.Body["data"])
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/api/runs?status=weird", nil).Status)
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/api/runs?cursor=garbage!", nil).Status)
	require.Equal(t, http.StatusBadRequest, e.do("GET", "/api/workflows?cursor=Z2FyYmFnZQ", nil).Status)

	many := e.do("POST", "/api/runs/rerun", map[string]any{"runIds": []string{id}})
	require.Equal(t, http.StatusAccepted, many.Status, string(many.Raw))
	require.Len(t, many.Body["data"], 1)
}

func TestHooksAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	def := map[string]any{
		"name":  "h-order",
		"input": map[string]any{"type": "object", "properties": map[string]any{"orderId": map[string]any{"type": "string"}}},
		"steps": []any{
			map[string]any{"id": "confirm", "hook": map[string]any{"token": "order:${{ input.orderId }}"}},
			map[string]any{"id": "done", "set": "${{ steps.confirm.output }}"},
		},
	}
	require.Equal(t, 201, e.do("POST", "/api/workflows", def).Status)
	require.Equal(t, 201, e.do("POST", "/api/workflows/h-order/publish", nil).Status)
	require.Equal(t, http.StatusNotFound, e.do("POST", "/api/hooks/order:1/resume", map[string]any{}).Status, "resume before the hook exists")

	run := e.do("POST", "/api/workflows/h-order/run", map[string]any{"orderId": "1"}).data()
	waiting := e.do("GET", "/api/runs/"+run["id"].(string)+"?wait=30s", nil).data()
	require.Equal(t, "waiting", waiting["status"])
	require.Equal(t, map[string]any{"token": "order:1"}, waiting["waitingOn"].(map[string]any)["hook"])

	hook := e.do("GET", "/api/hooks/order:1", nil)
	require.Equal(t, http.StatusOK, hook.Status)
	require.Equal(t, run["id"], hook.data()["runId"])

	res := e.do("POST", "/api/hooks/order:1/resume", map[string]any{"confirmed": true})
	require.Equal(t, http.StatusAccepted, res.Status, string(res.Raw))
	require.Equal(t, run["id"], res.data()["runId"])
	var done map[string]any
	require.Eventually(t, func() bool {
		done = e.do("GET", "/api/runs/"+run["id"].(string)+"?wait=1s", nil).data()
		return done["status"] == "completed"
	}, 30*time.Second, 10*time.Millisecond, "a waiting run answers ?wait at once, so poll")
	require.Equal(t, map[string]any{"confirmed": true}, done["output"])
	require.Equal(t, http.StatusNotFound, e.do("GET", "/api/hooks/order:1", nil).Status, "released when the run ended")
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.published("w-greet")
	url := e.do("GET", "/api/workflows/w-greet", nil).data()["webhookUrl"].(string)
	path := url[strings.Index(url, "/webhooks/"):]

	a := e.doAs("", "POST", path, map[string]any{"name": "Bob"})
	require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
	require.Equal(t, "completed", a.data()["status"])

	again := e.doAs("", "POST", path, map[string]any{"name": "Bob"}, "Idempotency-Key", "k1")
	replay := e.doAs("", "POST", path, map[string]any{"name": "Bob"}, "Idempotency-Key", "k1")
	require.Equal(t, again.data()["id"], replay.data()["id"])
	require.Equal(t, "true", replay.Header.Get("Idempotency-Replayed"))
	require.Equal(t, http.StatusOK, replay.Status, "a replay answers with the first call's run as it stands")
	require.Equal(t, "completed", replay.data()["status"])

	bad := e.doAs("", "POST", path, map[string]any{"name": 1}, "Idempotency-Key", "k2")
	require.Equal(t, http.StatusBadRequest, bad.Status, string(bad.Raw))
	badAgain := e.doAs("", "POST", path, map[string]any{"name": 1}, "Idempotency-Key", "k2")
	require.Equal(t, http.StatusBadRequest, badAgain.Status)
	require.Equal(t, "true", badAgain.Header.Get("Idempotency-Replayed"), "a webhook keeps its failed answers (SPEC §4 rule 10)")
	require.Equal(t, bad.Raw, badAgain.Raw)

	rot := e.do("POST", "/api/workflows/w-greet/webhook/rotate", nil)
	require.Equal(t, http.StatusCreated, rot.Status)
	require.Equal(t, http.StatusNotFound, e.doAs("", "POST", path, map[string]any{"name": "Bob"}).Status, "the old address stops at once")
}

func TestRunKeyedReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.published("k-greet")
	id := e.do("GET", "/api/workflows/k-greet", nil).data()["id"].(string)

	first := e.do("POST", "/api/workflows/k-greet/run", map[string]any{"name": "Ada"}, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusAccepted, first.Status)
	require.Empty(t, first.Header.Get("Idempotency-Replayed"))
	byID := e.do("POST", "/api/workflows/"+id+"/run?environment=production", `{ "name" : "Ada" }`, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusAccepted, byID.Status, string(byID.Raw))
	require.Equal(t, "true", byID.Header.Get("Idempotency-Replayed"), "by ID, with the environment spelled out and other whitespace: the same request")
	require.Equal(t, first.data()["id"], byID.data()["id"])

	other := e.do("POST", "/api/workflows/k-greet/run", map[string]any{"name": "Bob"}, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusUnprocessableEntity, other.Status)
	require.Equal(t, "VALIDATION_ERROR", other.errorCode())
	test := e.do("POST", "/api/workflows/k-greet/run?environment=test", map[string]any{"name": "Ada"}, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusUnprocessableEntity, test.Status, "test and production are different requests")

	require.Equal(t, http.StatusBadRequest, e.do("POST", "/api/workflows/k-greet/run", map[string]any{"name": "Ada"}, "Idempotency-Key", strings.Repeat("k", 256)).Status)
	failed := e.do("POST", "/api/workflows/k-greet/run", map[string]any{"name": 1}, "Idempotency-Key", "key-2")
	require.Equal(t, http.StatusBadRequest, failed.Status)
	fixed := e.do("POST", "/api/workflows/k-greet/run", map[string]any{"name": "Ada"}, "Idempotency-Key", "key-2")
	require.Equal(t, http.StatusAccepted, fixed.Status, "a failed answer is not kept: the key is free again")
}

func TestDefinitionLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	steps := make([]any, 10000)
	for i := range steps {
		steps[i] = map[string]any{"id": "s" + strings.Repeat("x", i%5) + string(rune('a'+i%26)), "set": 1}
	}
	huge := greetDef("l-huge")
	huge["steps"] = steps
	a := e.do("POST", "/api/workflows", huge)
	require.Equal(t, http.StatusBadRequest, a.Status)
	require.Equal(t, "VALIDATION_ERROR", a.errorCode())

	expr := greetDef("l-expr")
	expr["steps"] = []any{map[string]any{"id": "a", "set": "${{ " + strings.Repeat("1 + ", 3000) + "1 }}"}}
	b := e.do("POST", "/api/workflows", expr)
	require.Equal(t, http.StatusBadRequest, b.Status, string(b.Raw))
	require.Equal(t, 404, e.do("GET", "/api/workflows/l-huge", nil).Status, "nothing was written")
}

// TestRunListShortPages: a page that examined its bound of runs before it filled (completed
// runs under newer waiting ones, which SQLite walks) answers 200 with what it found, here
// nothing, and a nextCursor; following the cursors finds the completed run once, and the
// last page has no nextCursor.
func TestRunListShortPages(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, envConfig{runs: func(st runner.Store) runner.Store { return &runnertest.Examining{Store: st, N: 2} }})
	e.published("s-greet")
	done := e.do("POST", "/api/workflows/s-greet/run", map[string]any{"name": "Ada"}).data()["id"].(string)
	require.Equal(t, "completed", e.do("GET", "/api/runs/"+done+"?wait=30s", nil).data()["status"])
	nap := greetDef("s-nap")
	nap["steps"] = []any{map[string]any{"id": "nap", "sleep": map[string]any{"duration": "1h"}}}
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows", nap).Status)
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/workflows/s-nap/publish", nil).Status)
	for range 4 {
		require.Equal(t, http.StatusAccepted, e.do("POST", "/api/workflows/s-nap/run", map[string]any{"name": "x"}).Status)
	}

	first := e.do("GET", "/api/runs?status=completed&limit=10", nil)
	require.Equal(t, http.StatusOK, first.Status, string(first.Raw))
	require.Equal(t, []any{}, first.Body["data"], "the 2 runs examined are waiting")
	require.NotEmpty(t, first.Body["nextCursor"])

	var found []any
	cursor, pages := first.Body["nextCursor"].(string), 1
	for cursor != "" {
		a := e.do("GET", "/api/runs?status=completed&limit=10&cursor="+cursor, nil)
		require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
		for _, r := range a.Body["data"].([]any) {
			found = append(found, r.(map[string]any)["id"])
		}
		cursor, _ = a.Body["nextCursor"].(string)
		pages++
		require.Less(t, pages, 10, "pagination must end")
	}
	require.Equal(t, []any{done}, found)
	require.Equal(t, 3, pages, "4 waiting runs, 2 a page, then the completed one")
}
