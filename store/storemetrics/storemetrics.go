// Package storemetrics times the store calls of the engine and of keyed replay, by
// operation, whichever backend serves them: decorators of runner.Store and
// idempotency.Store that observe gorunner_store_duration_seconds{op}.
package storemetrics

import (
	"context"
	"encoding/json"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
)

// Timer observes how long store calls take, by operation.
type Timer struct{ seconds *prometheus.HistogramVec }

// New registers gorunner_store_duration_seconds with reg and returns the Timer that
// observes it.
func New(reg prometheus.Registerer) (*Timer, error) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gorunner_store_duration_seconds",
		Help:    "Latency of store calls made by the engine and the keyed-replay store, by operation.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"op"})
	if err := reg.Register(h); err != nil {
		return nil, err
	}
	return &Timer{seconds: h}, nil
}

// timed runs f and observes its duration as op.
func timed[T any](t *Timer, op string, f func() (T, error)) (T, error) {
	start := time.Now()
	v, err := f()
	t.seconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
	return v, err
}

// timedErr is timed for calls that return only an error.
func timedErr(t *Timer, op string, f func() error) error {
	_, err := timed(t, op, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// Runs is s with every call timed.
func (t *Timer) Runs(s runner.Store) runner.Store { return timedRuns{s: s, t: t} }

// Keys is s with every call timed.
func (t *Timer) Keys(s idempotency.Store) idempotency.Store { return timedKeys{s: s, t: t} }

// timedRuns is the engine's store, timed.
type timedRuns struct {
	s runner.Store
	t *Timer
}

var _ runner.Store = timedRuns{}

func (r timedRuns) CreateRun(ctx context.Context, p runner.CreateRunParams) (runner.CreateRunResult, error) {
	return timed(r.t, "create_run", func() (runner.CreateRunResult, error) { return r.s.CreateRun(ctx, p) })
}

func (r timedRuns) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	return timed(r.t, "get_run", func() (*runner.Run, error) { return r.s.GetRun(ctx, id) })
}

func (r timedRuns) ListRuns(ctx context.Context, p runner.ListRunsParams) ([]*runner.Run, string, error) {
	var next string
	list, err := timed(r.t, "list_runs", func() (l []*runner.Run, err error) {
		l, next, err = r.s.ListRuns(ctx, p)
		return l, err
	})
	return list, next, err
}

func (r timedRuns) ClaimRuns(ctx context.Context, p runner.ClaimRunsParams) ([]runner.Claimed, error) {
	return timed(r.t, "claim_runs", func() ([]runner.Claimed, error) { return r.s.ClaimRuns(ctx, p) })
}

func (r timedRuns) RenewLeases(ctx context.Context, p runner.RenewLeasesParams) (lost, cancelled []string, err error) {
	lost, err = timed(r.t, "renew_leases", func() (l []string, err error) {
		l, cancelled, err = r.s.RenewLeases(ctx, p)
		return l, err
	})
	return lost, cancelled, err
}

func (r timedRuns) SaveRun(ctx context.Context, lease runner.Lease, run *runner.Run, opts runner.SaveOptions) error {
	return timedErr(r.t, "save_run", func() error { return r.s.SaveRun(ctx, lease, run, opts) })
}

func (r timedRuns) ReleaseRun(ctx context.Context, lease runner.Lease) error {
	return timedErr(r.t, "release_run", func() error { return r.s.ReleaseRun(ctx, lease) })
}

func (r timedRuns) RequestCancel(ctx context.Context, runID string, now time.Time) (*runner.Run, error) {
	return timed(r.t, "request_cancel", func() (*runner.Run, error) { return r.s.RequestCancel(ctx, runID, now) })
}

func (r timedRuns) QueuePlace(ctx context.Context, run *runner.Run) (runner.QueuePlace, error) {
	return timed(r.t, "queue_place", func() (runner.QueuePlace, error) { return r.s.QueuePlace(ctx, run) })
}

func (r timedRuns) WakeRun(ctx context.Context, runID string, t time.Time) error {
	return timedErr(r.t, "wake_run", func() error { return r.s.WakeRun(ctx, runID, t) })
}

func (r timedRuns) ClaimToken(ctx context.Context, h *runner.Hook) error {
	return timedErr(r.t, "claim_token", func() error { return r.s.ClaimToken(ctx, h) })
}

func (r timedRuns) GetHook(ctx context.Context, env, token string) (*runner.Hook, error) {
	return timed(r.t, "get_hook", func() (*runner.Hook, error) { return r.s.GetHook(ctx, env, token) })
}

func (r timedRuns) EnqueuePayload(ctx context.Context, env, token string, payload json.RawMessage, now time.Time) (string, error) {
	return timed(r.t, "enqueue_payload", func() (string, error) { return r.s.EnqueuePayload(ctx, env, token, payload, now) })
}

func (r timedRuns) NextPayload(ctx context.Context, runID, env, token string) (*runner.Payload, error) {
	return timed(r.t, "next_payload", func() (*runner.Payload, error) { return r.s.NextPayload(ctx, runID, env, token) })
}

func (r timedRuns) MissAsk(ctx context.Context, runID string, step int) (int, error) {
	return timed(r.t, "miss_ask", func() (int, error) { return r.s.MissAsk(ctx, runID, step) })
}

func (r timedRuns) DeleteRun(ctx context.Context, id string) error {
	return timedErr(r.t, "delete_run", func() error { return r.s.DeleteRun(ctx, id) })
}

func (r timedRuns) SweepEnded(ctx context.Context, p runner.SweepParams) (runner.SweepResult, error) {
	return timed(r.t, "sweep_ended", func() (runner.SweepResult, error) { return r.s.SweepEnded(ctx, p) })
}

// timedKeys is the keyed-replay store, timed.
type timedKeys struct {
	s idempotency.Store
	t *Timer
}

var _ idempotency.Store = timedKeys{}

func (k timedKeys) Claim(ctx context.Context, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	return timed(k.t, "key_claim", func() (idempotency.ClaimResult, error) { return k.s.Claim(ctx, p) })
}

func (k timedKeys) Complete(ctx context.Context, r *idempotency.Record) error {
	return timedErr(k.t, "key_complete", func() error { return k.s.Complete(ctx, r) })
}

func (k timedKeys) Release(ctx context.Context, scope, key string) error {
	return timedErr(k.t, "key_release", func() error { return k.s.Release(ctx, scope, key) })
}

func (k timedKeys) Get(ctx context.Context, scope, key string, now time.Time) (*idempotency.Record, error) {
	return timed(k.t, "key_get", func() (*idempotency.Record, error) { return k.s.Get(ctx, scope, key, now) })
}

func (k timedKeys) List(ctx context.Context, p idempotency.ListParams) ([]*idempotency.Record, string, error) {
	var next string
	list, err := timed(k.t, "key_list", func() (l []*idempotency.Record, err error) {
		l, next, err = k.s.List(ctx, p)
		return l, err
	})
	return list, next, err
}
