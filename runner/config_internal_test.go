package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConfigRefusesNegativeBounds: a negative bound, a too-short lease or a custom kind
// without a handler is refused by New, naming the setting.
func TestConfigRefusesNegativeBounds(t *testing.T) {
	for name, cfg := range map[string]Config{
		"Concurrency":   {Concurrency: -1},
		"LeaseTTL":      {LeaseTTL: time.Millisecond},
		"PollInterval":  {PollInterval: -time.Second},
		"MaxWait":       {MaxWait: -time.Second},
		"AdmissionWork": {AdmissionWork: -time.Millisecond},
		"MaxDepth":      {MaxDepth: -1},
		"step kind":     {Kinds: map[string]StepHandler{"custom": nil}},
	} {
		c := cfg.withDefaults()
		err := c.validate()
		require.Error(t, err, name)
		require.Contains(t, err.Error(), name)
	}
	c := (*Config)(nil).withDefaults()
	require.NoError(t, c.validate(), "the defaults are valid")
	require.Equal(t, DefaultAdmissionWork, c.AdmissionWork)
}
