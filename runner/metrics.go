package runner

import (
	"fmt"

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
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.started, m.finished, m.steps} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering runner metrics: %w", err)
		}
	}
	return m, nil
}

// admitted counts a new run.
func (m *metrics) admitted(r *Run) { m.started.WithLabelValues(r.Workflow).Inc() }

// ended counts a run that reached its final status and observes the duration of each of
// its steps that ran, once: a run ends on exactly one worker. kind names step i's kind.
func (m *metrics) ended(r *Run, kind func(i int) string) {
	m.finished.WithLabelValues(r.Workflow, string(r.Status)).Inc()
	for i, s := range r.Steps {
		if s.StartedAt == nil || s.FinishedAt == nil || s.Status == StepSkipped {
			continue
		}
		m.steps.WithLabelValues(kind(i), string(s.Status)).Observe(s.FinishedAt.Sub(*s.StartedAt).Seconds())
	}
}
