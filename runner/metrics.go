package runner

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus collectors; without a Registerer they still count,
// unseen. Their labels take bounded values only, so /metrics does not grow with the number
// of runs: workflow names (workflows are created by admins), run statuses, and step kinds
// (the builtin ones and those Config.Kinds adds). Never run IDs, step IDs or inputs: step
// IDs are chosen by whoever writes a definition and drafts can change them on every test
// run.
type metrics struct {
	started  *prometheus.CounterVec
	finished *prometheus.CounterVec
	steps    *prometheus.HistogramVec
	// undelivered counts the payloads runs left queued for their tokens when they ended.
	undelivered *prometheus.CounterVec

	// The children of the vectors by their labels, held: finding one by its label values
	// hashes them every time, several times per run. As bounded as the labels.
	startedBy  held[string, prometheus.Counter]
	finishedBy held[labels, prometheus.Counter]
	stepsBy    held[labels, prometheus.Observer]
	leftBy     held[string, prometheus.Counter]
}

// labels are two label values.
type labels struct{ a, b string }

// held is a vector's children by their labels.
type held[K comparable, V any] struct {
	child func(K) V // the vector's child under K
	mu    sync.RWMutex
	m     map[K]V
}

// get returns the child under k.
func (h *held[K, V]) get(k K) V {
	h.mu.RLock()
	v, ok := h.m[k]
	h.mu.RUnlock()
	if ok {
		return v
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok = h.m[k]; !ok {
		if h.m == nil {
			h.m = map[K]V{}
		}
		v = h.child(k)
		h.m[k] = v
	}
	return v
}

// newMetrics makes the engine's collectors and registers them on reg when it is not nil.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gorunner_runs_started_total",
			Help: "Runs admitted, by workflow.",
		}, []string{"workflow"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gorunner_runs_finished_total",
			Help: "Runs ended by this process, by workflow and final status.",
		}, []string{"workflow", "status"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gorunner_step_duration_seconds",
			Help:    "Time from a step's start to its end (waits included), by step kind and final status.",
			Buckets: []float64{.001, .005, .025, .1, .5, 1, 5, 30, 120, 600, 3600, 86400},
		}, []string{"kind", "status"}),
		undelivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gorunner_payloads_undelivered_total",
			Help: "Payloads sent to a run's hook tokens that no hook step took before the run ended (kept on the run as undeliveredPayloads), by workflow.",
		}, []string{"workflow"}),
	}
	m.startedBy.child = func(w string) prometheus.Counter { return m.started.WithLabelValues(w) }
	m.finishedBy.child = func(k labels) prometheus.Counter { return m.finished.WithLabelValues(k.a, k.b) }
	m.stepsBy.child = func(k labels) prometheus.Observer { return m.steps.WithLabelValues(k.a, k.b) }
	m.leftBy.child = func(w string) prometheus.Counter { return m.undelivered.WithLabelValues(w) }
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.started, m.finished, m.steps, m.undelivered} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering runner metrics: %w", err)
		}
	}
	return m, nil
}

// admitted counts a new run.
func (m *metrics) admitted(r *Run) {
	m.startedBy.get(r.Workflow).Inc()
}

// ended counts a run that reached its final status (and the payloads it left undelivered)
// and observes the duration of each of
// its steps that ran, once: a run ends on exactly one worker. kind names step i's kind.
func (m *metrics) ended(r *Run, kind func(i int) string) {
	m.finishedBy.get(labels{r.Workflow, string(r.Status)}).Inc()
	if n := r.Undelivered.Count(); n > 0 {
		m.leftBy.get(r.Workflow).Add(float64(n))
	}
	for i, s := range r.Steps {
		if s.StartedAt == nil || s.FinishedAt == nil || s.Status == StepSkipped {
			continue
		}
		m.stepsBy.get(labels{kind(i), string(s.Status)}).Observe(s.FinishedAt.Sub(*s.StartedAt).Seconds())
	}
}
