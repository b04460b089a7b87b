package runner_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

func TestStatusValid(t *testing.T) {
	for _, s := range runner.Statuses() {
		require.True(t, s.Valid(), s)
	}
	for _, s := range []runner.Status{"", "done", "Pending"} {
		require.False(t, s.Valid(), s)
	}
	require.Equal(t, "queued, pending, running, waiting, completed, failed, cancelled", runner.StatusList())
}
