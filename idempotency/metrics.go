package idempotency

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a keyed request, the values of the metric's "outcome" label.
const (
	outcomeNew        = "new"
	outcomeReplay     = "replay"
	outcomeMismatch   = "mismatch"
	outcomeInProgress = "in_progress"
	outcomeCap        = "cap"
	outcomeStoreDown  = "store_down"
	outcomeInvalid    = "invalid"
	outcomeNotKept    = "not_kept"
)

type metrics struct {
	requests *prometheus.CounterVec
}

// newMetrics registers the counters on reg (when not nil). A second Service on the same
// registry shares the counters already there.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gorunner_idempotency_requests_total",
		Help: "Requests carrying an idempotency key, by outcome.",
	}, []string{"outcome"})
	if reg != nil {
		if err := reg.Register(requests); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return nil, fmt.Errorf("registering idempotency metrics: %w", err)
			}
			existing, ok := already.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, fmt.Errorf("registering idempotency metrics: %w", err)
			}
			requests = existing
		}
	}
	for _, o := range []string{outcomeNew, outcomeReplay, outcomeMismatch, outcomeInProgress,
		outcomeCap, outcomeStoreDown, outcomeInvalid, outcomeNotKept} {
		requests.WithLabelValues(o)
	}
	return &metrics{requests: requests}, nil
}

func (m *metrics) count(outcome string) {
	m.requests.WithLabelValues(outcome).Inc()
}
