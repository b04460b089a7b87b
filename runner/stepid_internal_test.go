package runner

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestStepIDIsNameBased: stepIds are the name-based UUIDs they always were (runs admitted
// before keep theirs), for any run ID and step name length.
func TestStepIDIsNameBased(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ run, step string }{
		{"", ""},
		{"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "charge"},
		{"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "ü-😀"},
		{"r1", strings.Repeat("s", 200)},
		{strings.Repeat("r", 500), "x"},
	} {
		want := uuid.NewSHA1(stepNamespace, []byte(tt.run+"\x00"+tt.step)).String()
		require.Equal(t, want, stepID(tt.run, tt.step), "%q %q", tt.run, tt.step)
	}
	// A value pinned from before the change: stepIds of stored runs must not move.
	require.Equal(t, "1672b22a-fd07-5e59-a640-0b3d53b7f7a1", stepID("run", "step"))
}
