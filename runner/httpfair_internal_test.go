package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConfigHTTPBounds: the http bounds default, the per-workflow one to at most the total,
// and a negative bound or a per-workflow bound above the total is refused, naming it.
func TestConfigHTTPBounds(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg            Config
		total, perFlow int
		refusedNaming  string
	}{
		"defaults":            {cfg: Config{}, total: DefaultHTTPConcurrency, perFlow: DefaultHTTPPerWorkflow},
		"small total":         {cfg: Config{HTTPConcurrency: 4}, total: 4, perFlow: 4},
		"both set":            {cfg: Config{HTTPConcurrency: 10, HTTPPerWorkflow: 3}, total: 10, perFlow: 3},
		"negative total":      {cfg: Config{HTTPConcurrency: -1}, refusedNaming: "HTTPConcurrency"},
		"negative per flow":   {cfg: Config{HTTPPerWorkflow: -1}, refusedNaming: "HTTPPerWorkflow"},
		"per flow over total": {cfg: Config{HTTPConcurrency: 4, HTTPPerWorkflow: 5}, refusedNaming: "HTTPPerWorkflow"},
	} {
		t.Run(name, func(t *testing.T) {
			c := tc.cfg.withDefaults()
			err := c.validate()
			if tc.refusedNaming != "" {
				require.ErrorContains(t, err, tc.refusedNaming)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.total, c.HTTPConcurrency)
			require.Equal(t, tc.perFlow, c.HTTPPerWorkflow)
		})
	}
}

// TestHTTPBackOff: runs of one workflow handed back for a full bound are due
// HTTPBusyDelay/perWorkflow apart, the first HTTPBusyDelay on, so that however many are
// handed back at once they come back at most perWorkflow per HTTPBusyDelay; another
// workflow has a schedule of its own, and a schedule that has passed starts again.
func TestHTTPBackOff(t *testing.T) {
	b := newHTTPBounds(8, 4)
	now := time.Unix(1_000_000, 0)
	step := HTTPBusyDelay / 4
	for i := range 10 {
		require.Equal(t, now.Add(HTTPBusyDelay+time.Duration(i)*step), b.backOff("a", now), "run %d of a", i)
	}
	require.Equal(t, now.Add(HTTPBusyDelay), b.backOff("b", now), "b waits on nobody")
	later := now.Add(time.Hour)
	require.Equal(t, later.Add(HTTPBusyDelay), b.backOff("a", later), "a's schedule has passed")
}

// TestHTTPBackOffPrune: the schedules of workflows that have passed are dropped, so that
// the schedules kept stay bounded however many workflows come and go, while a crowd of
// workflows with schedules to come (more than the bound) keep theirs; and the drops are
// spaced (pruneAt doubles with the schedules left), not made on every run handed back.
func TestHTTPBackOffPrune(t *testing.T) {
	b := newHTTPBounds(4, 2)
	now := time.Unix(1_000_000, 0)
	for i := range 100 { // each one's schedule has passed when the next comes
		b.backOff(fmt.Sprint("gone", i), now.Add(time.Duration(i)*time.Hour))
		require.LessOrEqual(t, len(b.backAt), 4, "after workflow %d", i)
	}
	later := now.Add(time.Hour * 1000)
	for i := range 40 { // all at once: every schedule is still to come
		b.backOff(fmt.Sprint("crowd", i), later)
	}
	require.Len(t, b.backAt, 40)
	require.GreaterOrEqual(t, b.pruneAt, 40, "a look at every schedule was made for each run handed back")
	for i := range 40 {
		require.Equal(t, later.Add(HTTPBusyDelay+HTTPBusyDelay/2), b.backOff(fmt.Sprint("crowd", i), later), "crowd %d", i)
	}
}
