package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// requestLog is a local HTTP server that answers every request with its body (a path
// under /fail with 500) and logs each request's path, Idempotency-Key and body, in
// arrival order.
type requestLog struct {
	mu   sync.Mutex
	reqs []loggedRequest
	srv  *httptest.Server
}

type loggedRequest struct {
	Path, Key, Body string
}

func newRequestLog(t *testing.T) *requestLog {
	l := &requestLog{}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.reqs = append(l.reqs, loggedRequest{Path: r.URL.Path, Key: r.Header.Get("Idempotency-Key"), Body: string(body)})
		l.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusInternalServerError)
		}
		if len(body) == 0 {
			body = []byte("null")
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *requestLog) requests() []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedRequest(nil), l.reqs...)
}

// nestedStepID is the stepId of the record at path in run runID.
func nestedStepID(runID, path string) string {
	return uuid.NewSHA1(stepNamespace, []byte(runID+"\x00"+path)).String()
}

func TestFlowHTTPStepsSendTheirOwnKeys(t *testing.T) {
	backends(t, func(t *testing.T, h *harness, e *runner.Engine) {
		log := newRequestLog(t)
		name := h.define(fmt.Sprintf(`
name: charge-each
input: { type: object }
steps:
  - id: each
    foreach:
      items: "${{ input.orders }}"
      as: order
      steps:
        - { id: charge, http: { method: POST, url: "%s/charges", body: { id: "${{ order }}" } } }
        - { id: id, set: "${{ steps.charge.output.body.id }}" }
`, log.srv.URL))
		r := h.run(e, name, `{"orders":["a","b","c"]}`, runner.StatusCompleted)
		require.JSONEq(t, `["a","b","c"]`, string(r.Output))
		reqs := log.requests()
		require.Len(t, reqs, 3)
		for k, req := range reqs {
			require.Equal(t, nestedStepID(r.ID, fmt.Sprintf("each/%d/charge", k)), req.Key)
			require.JSONEq(t, fmt.Sprintf(`{"id":%q}`, "abc"[k:k+1]), req.Body)
		}
	})
}

func TestFlowWaitAndRestartRunNothingTwice(t *testing.T) {
	h := newHarness(t)
	count := &counter{calls: map[string]int{}}
	kinds := map[string]runner.StepHandler{"count": count}
	name := h.define(`
name: poll-each
input: { type: object }
steps:
  - id: each
    foreach:
      items: [0, 1, 2]
      steps:
        - id: poll
          loop:
            until: "${{ steps.tick.output >= 1 }}"
            maxIterations: 3
            steps:
              - { id: tick, count: {} }
              - { id: nap, if: "${{ item == 1 && iteration == 0 }}", sleep: { duration: 1h } }
`)
	first := h.newEngine(runner.Config{Kinds: kinds})
	require.NoError(t, first.Start(context.Background()))
	r := h.run(first, name, `{}`, runner.StatusWaiting)
	require.Equal(t, runner.StepWaiting, record(r, "each/1/poll/0/nap").Status)
	require.NoError(t, first.Stop(context.Background()))

	h.clock.Advance(2 * time.Hour)
	second := h.engine(runner.Config{Kinds: kinds}, h.open())
	r = h.await(second, r.ID, runner.StatusCompleted)
	require.JSONEq(t, `[null,null,null]`, string(r.Output), "each pass ends with nap, skipped or slept")
	keys, calls := count.total()
	require.Equal(t, 3, keys, "one tick per item: each loop's first pass ends it")
	require.Equal(t, 3, calls, "no completed nested step ran again after the restart")
}

func TestFlowResumesAnInterruptedIteration(t *testing.T) {
	h := newHarness(t)
	entered := make(chan struct{}, 1)
	var mu sync.Mutex
	calls := map[string]int{}
	var attempts atomic.Int32
	slow := runner.StepHandlerFunc(func(ctx context.Context, sc *runner.StepContext) (any, error) {
		mu.Lock()
		calls[sc.StepID]++
		mu.Unlock()
		if fmt.Sprint(sc.Params.(map[string]any)["n"]) == "2" && attempts.Add(1) == 1 {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return sc.Params, nil
	})
	kinds := map[string]runner.StepHandler{"slow": slow}
	name := h.define(`
name: resume-each
input: { type: object }
steps:
  - { id: each, foreach: { items: [0, 1, 2, 3], steps: [{ id: work, slow: { n: "${{ item }}" } }] } }
`)
	first := h.newEngine(runner.Config{Kinds: kinds, LeaseTTL: time.Hour})
	require.NoError(t, first.Start(context.Background()))
	r := h.submit(first, name, `{}`)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.NoError(t, first.Stop(ctx))

	second := h.engine(runner.Config{Kinds: kinds}, h.open())
	done := h.await(second, r.ID, runner.StatusCompleted)
	require.JSONEq(t, `[{"n":0},{"n":1},{"n":2},{"n":3}]`, string(done.Output))
	mu.Lock()
	defer mu.Unlock()
	for k := range 4 {
		want := 1
		if k == 2 {
			want = 2 // interrupted, then made again with the same stepId
		}
		require.Equal(t, want, calls[nestedStepID(r.ID, fmt.Sprintf("each/%d/work", k))], "item %d", k)
	}
}

// TestFlowConcurrentForeachResumesAfterInterruption stops the engine while a foreach of
// http steps at concurrency 5 is in flight, and lets another finish it: every item is
// called with its own stable key, no item whose step had completed is called again, and
// the output is complete and in order.
func TestFlowConcurrentForeachResumesAfterInterruption(t *testing.T) {
	h := newHarness(t)
	entered := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		if string(body) == `{"n":12}` {
			first := false
			once.Do(func() { first = true })
			if first {
				close(entered)
				<-r.Context().Done() // held until the engine's stop interrupts it
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	items := make([]string, 20)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	name := h.define(fmt.Sprintf(`
name: resume-concurrent
input: { type: object }
steps:
  - id: each
    foreach:
      items: [%s]
      concurrency: 5
      steps: [{ id: call, http: { method: POST, url: "%s/c", body: { n: "${{ item }}" } } }]
`, strings.Join(items, ","), srv.URL))
	first := h.newEngine(runner.Config{LeaseTTL: time.Hour})
	require.NoError(t, first.Start(context.Background()))
	r := h.submit(first, name, `{}`)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.NoError(t, first.Stop(ctx))
	stopped, err := h.open().GetRun(context.Background(), r.ID)
	require.NoError(t, err)

	second := h.engine(runner.Config{}, h.open())
	done := h.await(second, r.ID, runner.StatusCompleted)
	want := make([]string, len(items))
	for i := range want {
		want[i] = fmt.Sprintf(`{"n":%d}`, i)
	}
	var out []struct{ Body json.RawMessage }
	require.NoError(t, json.Unmarshal(done.Output, &out))
	require.Len(t, out, len(items))
	mu.Lock()
	defer mu.Unlock()
	for k := range items {
		require.JSONEq(t, want[k], string(out[k].Body), "item %d in order", k)
		key := nestedStepID(r.ID, fmt.Sprintf("each/%d/call", k))
		require.GreaterOrEqual(t, calls[key], 1, "item %d called with its own key", k)
		if rec := record(stopped, fmt.Sprintf("each/%d/call", k)); rec != nil && rec.Status == runner.StepCompleted {
			require.Equal(t, 1, calls[key], "item %d completed before the stop and was not called again", k)
		}
	}
	require.Len(t, calls, len(items), "no request without an item's key")
}
