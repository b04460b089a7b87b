package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
)

// TestSize: the store's size counts its own schema's tables, and grows with its runs.
func TestSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := fresh(t)
	empty, err := s.Size(ctx)
	require.NoError(t, err)
	require.Positive(t, empty)
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	input := json.RawMessage(`{"blob":"` + strings.Repeat("x", 4000) + `"}`)
	for i := range 200 {
		r := &runner.Run{ID: fmt.Sprintf("run-%03d", i), WorkflowID: "wf", Workflow: "wf", Version: 1,
			Environment: runner.EnvProduction, Status: runner.StatusCompleted, Input: input, CreatedAt: at, FinishedAt: &at}
		require.NoError(t, runnertest.Create(ctx, s, r, nil))
	}
	full, err := s.Size(ctx)
	require.NoError(t, err)
	require.Greater(t, full, empty)
}
