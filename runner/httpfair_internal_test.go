package runner

import (
	"testing"

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
