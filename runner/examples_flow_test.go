package runner_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/examples"
	"github.com/gorunner/gorunner/runner"
)

// defineExample publishes the shipped example file on h.
func defineExample(t *testing.T, h *harness, file string) string {
	raw, err := fs.ReadFile(examples.Workflows(), file)
	require.NoError(t, err)
	return h.define(string(raw))
}

// fakeServices answers the example workflows' endpoints: quotes (ups is down), charges
// (order "bad" is declined), refunds and alerts (logged), jobs (ready at the third look).
type fakeServices struct {
	mu    sync.Mutex
	log   []string
	looks int
}

func (f *fakeServices) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, fmt.Sprintf("%s %v %v", r.URL.Path, body["order"], body["charge"]))
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/quotes/ups":
		w.WriteHeader(http.StatusBadRequest)
	case strings.HasPrefix(r.URL.Path, "/quotes/"):
		fmt.Fprintf(w, `{"price": %d}`, len(r.URL.Path))
	case r.URL.Path == "/charges" && body["order"] == "bad":
		w.WriteHeader(http.StatusPaymentRequired)
	case r.URL.Path == "/charges":
		fmt.Fprintf(w, `{"id": "ch-%v"}`, body["order"])
	case strings.HasPrefix(r.URL.Path, "/jobs/"):
		f.looks++
		fmt.Fprintf(w, `{"ready": %t, "looks": %d}`, f.looks >= 3, f.looks)
	default:
		_, _ = w.Write([]byte(`{}`))
	}
}

func (f *fakeServices) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func TestExampleWorkflowsRun(t *testing.T) {
	h := newHarness(t)
	e := h.engine(runner.Config{})
	fake := &fakeServices{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)

	r := h.run(e, defineExample(t, h, "quote-compare.yaml"), fmt.Sprintf(`{"baseUrl":%q,"parcel":{"weightKg":2}}`, srv.URL), runner.StatusCompleted)
	require.JSONEq(t, `{"fedex":13,"ups":null,"dhl":11}`, string(r.Output))

	name := defineExample(t, h, "batch-charge.yaml")
	r = h.run(e, name, fmt.Sprintf(`{"baseUrl":%q,"orders":[{"id":"a","amount":1},{"id":"b","amount":2}]}`, srv.URL), runner.StatusCompleted)
	require.JSONEq(t, `[{"order":"a","charge":"ch-a"},{"order":"b","charge":"ch-b"}]`, string(r.Output))
	before := len(fake.calls())
	r = h.run(e, name, fmt.Sprintf(`{"baseUrl":%q,"orders":[{"id":"c","amount":1},{"id":"bad","amount":2}]}`, srv.URL), runner.StatusFailed)
	require.Equal(t, "charge-each/1/charge", r.Error.Step)
	calls := fake.calls()[before:]
	require.ElementsMatch(t, []string{"/charges c <nil>", "/charges bad <nil>"}, calls[:2], "charged five at a time")
	// The charge of c is refunded when it completed; the failed one cancels it when its
	// answer had not come yet.
	want := []string{"/alerts <nil> <nil>"}
	if record(r, "charge-each/0/charge").Status == runner.StepCompleted {
		want = append([]string{"/refunds <nil> ch-c"}, want...)
	}
	require.Equal(t, want, calls[2:])

	r = h.submit(e, defineExample(t, h, "job-poller.yaml"), fmt.Sprintf(`{"baseUrl":%q,"jobId":"42"}`, srv.URL))
	require.Eventually(t, func() bool {
		h.clock.Advance(5 * time.Second)
		got, err := e.Get(t.Context(), r.ID)
		require.NoError(t, err)
		r = got
		return got.Status.Terminal()
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, runner.StatusCompleted, r.Status, "%+v", r.Error)
	require.JSONEq(t, `{"ready":true,"looks":3}`, string(r.Output))
}
