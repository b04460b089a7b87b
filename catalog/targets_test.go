package catalog

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestTargetsStayWithinTheirBounds: however many or however large the answers kept, the
// cache holds at most MaxCachedTargets entries and MaxCachedTargetBytes of definitions, and
// its byte count is the sum of what it holds, replacements included.
func TestTargetsStayWithinTheirBounds(t *testing.T) {
	t.Parallel()
	sum := func(c *targets) int {
		n := 0
		for _, e := range c.by {
			n += len(e.target.Definition)
		}
		return n
	}
	tests := []struct {
		name    string
		puts    int
		keys    int // distinct keys, cycled
		defSize int
	}{
		{"many small", MaxCachedTargets + 10, MaxCachedTargets + 10, 10},
		{"large definitions", 200, 200, 1 << 20},
		{"one key replaced", 100, 1, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c targets
			def := bytes.Repeat([]byte("x"), tc.defSize)
			for i := range tc.puts {
				key := fmt.Sprint(i % tc.keys)
				c.put(key, 1, &runner.Target{Name: key, Definition: def})
				require.LessOrEqual(t, len(c.by), MaxCachedTargets)
				require.LessOrEqual(t, c.bytes, MaxCachedTargetBytes)
				require.Equal(t, sum(&c), c.bytes)
				got, ok := c.get(key, 1)
				require.True(t, ok, "the answer just kept is found")
				require.True(t, bytes.Equal(def, got.Definition), "the answer kept is the one put")
			}
		})
	}
}
