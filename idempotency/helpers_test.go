package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/syncbuf"
	"github.com/gorunner/gorunner/internal/testclock"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// openStore opens a fresh SQLite store in the test's temp dir.
func openStore(t testing.TB) *sqlitestore.Store {
	t.Helper()
	return openStoreAt(t, filepath.Join(t.TempDir(), "gorunner.db"))
}

func openStoreAt(t testing.TB, path string) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// harness is a Service over a store, with its clock, metrics and logs at hand.
type harness struct {
	svc   *idempotency.Service
	clock *testclock.Clock
	reg   *prometheus.Registry
	logs  *syncbuf.Buffer
}

// newHarness builds a Service over st (a fresh SQLite store when nil); tune adjusts the
// config.
func newHarness(t testing.TB, st idempotency.Store, tune func(*idempotency.Config)) *harness {
	t.Helper()
	if st == nil {
		st = openStore(t)
	}
	h := &harness{clock: testclock.New(epoch), reg: prometheus.NewRegistry(), logs: &syncbuf.Buffer{}}
	cfg := &idempotency.Config{
		Now:        h.clock.Now,
		Logger:     slog.New(slog.NewTextHandler(h.logs, nil)),
		Registerer: h.reg,
	}
	if tune != nil {
		tune(cfg)
	}
	svc, err := idempotency.New(st, cfg)
	require.NoError(t, err)
	h.svc = svc
	return h
}

// count reads the requests counter for outcome.
func (h *harness) count(t testing.TB, outcome string) float64 {
	t.Helper()
	families, err := h.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "gorunner_idempotency_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no counter for outcome %q", outcome)
	return 0
}

// handler mounts the Middleware in front of next as the api would: the principal comes
// from X-Principal, webhooks are keyed by workflow with the webhook policy, and errors are
// written with the SPEC status codes.
func (h *harness) handler(next http.Handler) http.Handler {
	return h.svc.Middleware(scopeOf, writeError)(next)
}

func scopeOf(r *http.Request) (string, idempotency.Policy, bool) {
	if wf, ok := strings.CutPrefix(r.URL.Path, "/webhooks/"); ok {
		return idempotency.WorkflowScope(wf), idempotency.Policy{KeepFailures: true, EvictOldest: true}, true
	}
	p := r.Header.Get("X-Principal")
	return idempotency.PrincipalScope(p), idempotency.Policy{}, p != ""
}

func writeError(w http.ResponseWriter, _ *http.Request, err error) {
	var limit *idempotency.LimitError
	var tooBig *http.MaxBytesError
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, idempotency.ErrInvalidKey):
		status = http.StatusBadRequest
	case errors.Is(err, idempotency.ErrKeyMismatch):
		status = http.StatusUnprocessableEntity
	case errors.Is(err, idempotency.ErrInProgress), errors.Is(err, idempotency.ErrAnswerNotKept):
		status = http.StatusConflict
	case errors.As(err, &limit):
		status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", strconv.Itoa(int(limit.RetryAfter/time.Second)))
	case errors.As(err, &tooBig):
		status = http.StatusRequestEntityTooLarge
	}
	http.Error(w, err.Error(), status)
}

// app is the handler behind the middleware: it counts its calls and answers with the
// status asked in X-Status (default 201) and a body of X-Size bytes (default small).
type app struct {
	calls   atomic.Int64
	entered chan struct{} // when set, receives once the handler has started
	release chan struct{} // when set, the handler waits for it to close
	clock   *testclock.Clock
	advance time.Duration // how far the handler moves the clock, as if it took that long
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := a.calls.Add(1)
	if a.entered != nil {
		a.entered <- struct{}{}
	}
	if a.release != nil {
		<-a.release
	}
	if a.clock != nil {
		a.clock.Advance(a.advance)
	}
	status := http.StatusCreated
	if s := r.Header.Get("X-Status"); s != "" {
		status, _ = strconv.Atoi(s)
	}
	body := fmt.Sprintf(`{"call":%d}`, n)
	if size, _ := strconv.Atoi(r.Header.Get("X-Size")); size > len(body) {
		body += strings.Repeat(" ", size-len(body))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/api/runs/"+strconv.FormatInt(n, 10))
	w.Header().Set("X-Not-Kept", "1")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// call is one request through a handler.
type call struct {
	method, target, key, principal, body string
	noKey                                bool
	status, size                         int // what the app answers with
}

func (c call) serve(h http.Handler) *httptest.ResponseRecorder {
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	target := c.target
	if target == "" {
		target = "/api/workflows/w/run?environment=production"
	}
	r := httptest.NewRequest(method, target, strings.NewReader(c.body))
	if !c.noKey {
		r.Header.Set(idempotency.HeaderKey, c.key)
	}
	if c.principal != "" {
		r.Header.Set("X-Principal", c.principal)
	}
	if c.status != 0 {
		r.Header.Set("X-Status", strconv.Itoa(c.status))
	}
	if c.size != 0 {
		r.Header.Set("X-Size", strconv.Itoa(c.size))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
