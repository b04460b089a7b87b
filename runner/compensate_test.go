package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// paths are the paths of logged requests, in order.
func paths(reqs []loggedRequest) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Path
	}
	return out
}

func TestCompensationNewestFirstThenOnFailure(t *testing.T) {
	backends(t, func(t *testing.T, h *harness, e *runner.Engine) {
		log := newRequestLog(t)
		name := h.define(strings.ReplaceAll(`
name: saga
input: { type: object }
steps:
  - id: charge
    http: { method: POST, url: "URL/charge", body: { amount: 5 } }
    compensate: { http: { method: POST, url: "URL/refund", body: { refund: "${{ steps.charge.output.body.amount }}", why: "${{ run.error.code }}" } } }
  - { id: note, set: 1, compensate: { set: 2 } }
  - id: reserve
    http: { method: POST, url: "URL/reserve", body: {} }
    compensate: { http: { method: POST, url: "URL/fail-release", body: {} }, retry: { maxAttempts: 2, initialInterval: 1ms } }
  - { id: skipped, if: "${{ false }}", http: { url: "URL/never" }, compensate: { http: { url: "URL/never" } } }
  - { id: boom, fail: { message: out of stock, code: NO_STOCK } }
  - { id: never, http: { url: "URL/never" }, compensate: { http: { url: "URL/never" } } }
onFailure:
  - { id: tell, http: { method: POST, url: "URL/tell", body: { error: "${{ run.error }}" } } }
`, "URL", log.srv.URL))
		r := h.run(e, name, `{}`, runner.StatusFailed)
		require.Equal(t, "NO_STOCK", r.Error.Code)
		require.Equal(t, "boom", r.Error.Step)
		reqs := log.requests()
		require.Equal(t, []string{"/charge", "/reserve", "/fail-release", "/fail-release", "/refund", "/tell"}, paths(reqs))
		require.JSONEq(t, `{"refund":5,"why":"NO_STOCK"}`, reqs[4].Body)
		require.JSONEq(t, `{"error":{"code":"NO_STOCK","message":"out of stock","step":"boom"}}`, reqs[5].Body)
		require.Equal(t, nestedStepID(r.ID, "charge/compensate"), reqs[4].Key)
		require.Equal(t, reqs[2].Key, reqs[3].Key, "a compensation's retry sends its stepId again")

		release := record(r, "reserve/compensate")
		require.Equal(t, runner.StepFailed, release.Status, "a failed compensation is recorded")
		require.Equal(t, 2, release.Attempts)
		require.Equal(t, runner.StepCompleted, record(r, "note/compensate").Status)
		require.Equal(t, runner.StepCompleted, record(r, "onFailure/tell").Status)
		require.Nil(t, record(r, "skipped/compensate"))
		require.Nil(t, record(r, "never/compensate"))
	})
}

func TestCompensationPerIterationOfAForeach(t *testing.T) {
	backends(t, func(t *testing.T, h *harness, e *runner.Engine) {
		log := newRequestLog(t)
		name := h.define(strings.ReplaceAll(`
name: batch-charge
input: { type: object }
steps:
  - id: each
    foreach:
      items: [a, b, c]
      steps:
        - id: charge
          http: { method: POST, url: "URL/charge", body: { item: "${{ item }}" } }
          compensate: { http: { method: POST, url: "URL/refund", body: { item: "${{ item }}", at: "${{ index }}", charged: "${{ steps.charge.output.body.item }}" } } }
        - { id: check, if: "${{ item == 'c' }}", fail: { message: "declined ${{ item }}", code: DECLINED } }
`, "URL", log.srv.URL))
		r := h.run(e, name, `{}`, runner.StatusFailed)
		require.Equal(t, "DECLINED", r.Error.Code)
		require.Equal(t, "each/2/check", r.Error.Step)
		reqs := log.requests()
		require.Equal(t, []string{"/charge", "/charge", "/charge", "/refund", "/refund", "/refund"}, paths(reqs))
		for n, k := range []int{2, 1, 0} {
			req := reqs[3+n]
			item := "abc"[k : k+1]
			require.JSONEq(t, fmt.Sprintf(`{"item":%q,"at":%d,"charged":%q}`, item, k, item), req.Body)
			require.Equal(t, nestedStepID(r.ID, fmt.Sprintf("each/%d/charge/compensate", k)), req.Key)
		}
	})
}

func TestCancelledRunCompensates(t *testing.T) {
	h := newHarness(t)
	log := newRequestLog(t)
	e := h.engine(runner.Config{})
	name := h.define(strings.ReplaceAll(`
name: cancel-saga
input: { type: object }
steps:
  - id: charge
    http: { method: POST, url: "URL/charge", body: {} }
    compensate: { http: { method: POST, url: "URL/refund", body: { why: "${{ run.error.code }}" } } }
  - { id: nap, sleep: { duration: 1h } }
onFailure:
  - { id: tell, set: "${{ run.error.code }}" }
`, "URL", log.srv.URL))
	r := h.run(e, name, `{}`, runner.StatusWaiting)
	_, err := e.Cancel(context.Background(), r.ID)
	require.NoError(t, err)
	r = h.await(e, r.ID, runner.StatusCancelled)
	require.Nil(t, r.Error)
	reqs := log.requests()
	require.Equal(t, []string{"/charge", "/refund"}, paths(reqs))
	require.JSONEq(t, `{"why":"CANCELLED"}`, reqs[1].Body)
	require.JSONEq(t, `"CANCELLED"`, string(record(r, "onFailure/tell").Output))
	require.Equal(t, runner.StepCancelled, record(r, "nap").Status)
}
