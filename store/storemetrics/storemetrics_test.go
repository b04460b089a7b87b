package storemetrics_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/sqlitestore"
	"github.com/gorunner/gorunner/store/storemetrics"
)

// TestTimerObservesEachOperation: a timed call passes the backend's answer through
// (here its ErrNotFound) and is observed under its operation.
func TestTimerObservesEachOperation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "gorunner.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg := prometheus.NewRegistry()
	timer, err := storemetrics.New(reg)
	require.NoError(t, err)

	_, err = timer.Runs(st).GetRun(ctx, "missing")
	require.ErrorIs(t, err, runner.ErrNotFound)
	_, err = timer.Keys(st).Get(ctx, "scope", "missing", time.Now())
	require.ErrorIs(t, err, idempotency.ErrNotFound)
	_, err = timer.Keys(st).Get(ctx, "scope", "missing", time.Now())
	require.ErrorIs(t, err, idempotency.ErrNotFound)

	require.Equal(t, map[string]uint64{"get_run": 1, "key_get": 2}, samples(t, reg))
	_, err = storemetrics.New(reg)
	require.Error(t, err, "the histogram is registered once per registry")
}

// samples is the number of observations of gorunner_store_duration_seconds, by op.
func samples(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]uint64{}
	for _, f := range families {
		require.Equal(t, "gorunner_store_duration_seconds", f.GetName())
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
		}
	}
	return got
}
