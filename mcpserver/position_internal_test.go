package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestDescribeCountsTopLevelStepsAndIterations: a run's nested records (after its
// top-level ones) do not count as steps, and a foreach at hand says how many of its
// iterations finished.
func TestDescribeCountsTopLevelStepsAndIterations(t *testing.T) {
	t.Parallel()
	def := json.RawMessage(`{"name":"w","input":{"type":"object"},"steps":[
		{"id":"charge-each","foreach":{"items":"${{ input.orders }}","steps":[{"id":"charge","set":1},{"id":"note","set":2}]}},
		{"id":"done","set":1}]}`)
	rec := func(id, path string, status runner.StepStatus) *runner.StepRecord {
		return &runner.StepRecord{ID: id, Path: path, Status: status}
	}
	run := &runner.Run{Status: runner.StatusRunning, Definition: def, Steps: []*runner.StepRecord{
		{ID: "charge-each", Status: runner.StepRunning, State: json.RawMessage(`{"items":120}`)},
		rec("done", "", runner.StepPending),
		rec("charge", "charge-each/0/charge", runner.StepCompleted),
		rec("note", "charge-each/0/note", runner.StepCompleted),
		rec("charge", "charge-each/1/charge", runner.StepCompleted),
		rec("note", "charge-each/1/note", runner.StepRunning),
	}}
	pos, err := positionOf(run)
	require.NoError(t, err)
	require.Equal(t, 0, pos.index)
	require.Equal(t, "step 1/2 charge-each (foreach), charge-each: 1/120", pos.describe(run))

	run.Steps[0].Status, run.Steps[0].State = runner.StepCompleted, nil
	pos, err = positionOf(run)
	require.NoError(t, err)
	require.Equal(t, "step 2/2 done (set)", pos.describe(run))
}
