package runner

import "github.com/prometheus/client_golang/prometheus"

// DeletedCounter is the sweeper's count of deletions.
func (w *Sweeper) DeletedCounter() prometheus.Counter { return w.deleted }

// SizeGauge is the sweeper's gauge of the store's size.
func (w *Sweeper) SizeGauge() prometheus.Gauge { return w.size }
