package runner

import "github.com/prometheus/client_golang/prometheus"

// DeletedCounter is the sweeper's count of deletions for reason.
func (w *Sweeper) DeletedCounter(reason string) prometheus.Counter {
	return w.deleted.WithLabelValues(reason)
}

// SizeGauge is the sweeper's gauge of the store's size.
func (w *Sweeper) SizeGauge() prometheus.Gauge { return w.size }
