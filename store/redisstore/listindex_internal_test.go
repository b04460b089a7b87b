package redisstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestListIndex: a list walks the narrowest index its filter names (a workflow, else a
// status, else all runs), and reads runs whole with no sift first exactly when that index
// serves the whole filter, both chosen in one place.
func TestListIndex(t *testing.T) {
	t.Parallel()
	s := &Store{k: keys{p: "t:"}}
	own := &runner.Readable{StartedBy: "p"}
	tests := []struct {
		name   string
		p      runner.ListRunsParams
		index  string
		served bool
	}{
		{"all", runner.ListRunsParams{}, s.k.runsCreated(), true},
		{"workflow", runner.ListRunsParams{WorkflowID: "w"}, s.k.runsByWorkflow("w"), true},
		{"status", runner.ListRunsParams{Status: runner.StatusCompleted}, s.k.runsByStatus("completed"), true},
		{"workflow and status", runner.ListRunsParams{WorkflowID: "w", Status: runner.StatusFailed}, s.k.runsByWorkflow("w"), false},
		{"environment", runner.ListRunsParams{Environment: runner.EnvTest}, s.k.runsCreated(), false},
		{"tasks of a status", runner.ListRunsParams{Status: runner.StatusWaiting, Task: true}, s.k.runsByStatus("waiting"), false},
		{"readable workflow", runner.ListRunsParams{WorkflowID: "w", Readable: own}, s.k.runsByWorkflow("w"), false},
		{"readable", runner.ListRunsParams{Readable: &runner.Readable{}}, s.k.runsCreated(), false},
	}
	for _, tc := range tests {
		index, served := s.listIndex(tc.p)
		require.Equal(t, tc.index, index, tc.name)
		require.Equal(t, tc.served, served, tc.name)
	}
}
