package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRetentionFlag is --retention: days or a duration, shown back as given, and one under
// 1s refused before serve opens anything.
func TestRetentionFlag(t *testing.T) {
	var d time.Duration
	v := retentionValue{&d}
	for in, want := range map[string]string{"30d": "30d", "0": "0d", "36h": "36h0m0s", "1s": "1s"} {
		require.NoError(t, v.Set(in), in)
		require.Equal(t, want, v.String(), in)
	}
	require.Error(t, v.Set("999ms"))

	var out bytes.Buffer
	root := newRootCommand()
	root.SetArgs([]string{"serve", "--retention", "999ms", "--data-dir", t.TempDir()})
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	require.ErrorContains(t, err, "retention")
	require.ErrorContains(t, err, "at least 1s")
}
