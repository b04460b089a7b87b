package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/schemas"
)

func endedRun(id string, status Status, output int) *Run {
	return &Run{ID: id, Status: status, Output: json.RawMessage(bytes.Repeat([]byte("1"), output)),
		Steps: []*StepRecord{{ID: "a", Status: StepCompleted, Output: json.RawMessage(`1`)}}}
}

// TestEndedRunsBounds: only ended runs are kept, each a copy; past MaxEndedRunsKept or
// MaxEndedRunsBytes the oldest go first, and a run too big to keep is not kept.
func TestEndedRunsBounds(t *testing.T) {
	var c endedRuns
	c.put(endedRun("running", StatusRunning, 1))
	c.put(endedRun("waiting", StatusWaiting, 1))
	_, ok := c.get("running")
	require.False(t, ok, "a run that did not end is not kept")
	_, ok = c.get("waiting")
	require.False(t, ok)

	c.put(endedRun("big", StatusCompleted, MaxEndedRunsBytes/256+1))
	_, ok = c.get("big")
	require.False(t, ok, "a run too big to keep")

	kept := endedRun("kept", StatusFailed, 1)
	c.put(kept)
	got, ok := c.get("kept")
	require.True(t, ok)
	require.Equal(t, kept, got)
	got.Steps[0].Status = StepFailed
	again, _ := c.get("kept")
	require.Equal(t, StepCompleted, again.Steps[0].Status, "get hands out copies")
	kept.Steps[0].Status = StepFailed
	again, _ = c.get("kept")
	require.Equal(t, StepCompleted, again.Steps[0].Status, "put keeps a copy")

	for i := range MaxEndedRunsKept {
		c.put(endedRun(fmt.Sprint(i), StatusCompleted, 1))
	}
	require.Len(t, c.by, MaxEndedRunsKept)
	_, ok = c.get("kept")
	require.False(t, ok, "the oldest went first")
	_, ok = c.get(fmt.Sprint(MaxEndedRunsKept - 1))
	require.True(t, ok)

	per := MaxEndedRunsBytes/256 - runBytes(endedRun("", StatusCompleted, 0))
	for i := range 300 {
		c.put(endedRun(fmt.Sprintf("b%d", i), StatusCompleted, per-1))
	}
	require.LessOrEqual(t, c.bytes, MaxEndedRunsBytes)
	_, ok = c.get("b299")
	require.True(t, ok)
	_, ok = c.get("b0")
	require.False(t, ok, "past the bytes bound the oldest went first")
}

// TestEndedRunsCountStepRecords: a run's step records count for what they hold in memory,
// not only their byte slices, so that runs of many small steps keep the ended runs within
// MaxEndedRunsBytes: a run of MaxSteps steps is too big to keep, whatever its outputs.
func TestEndedRunsCountStepRecords(t *testing.T) {
	r := &Run{ID: "many", Status: StatusCompleted, Definition: json.RawMessage(`{}`)}
	for i := range schemas.MaxSteps {
		r.Steps = append(r.Steps, &StepRecord{ID: fmt.Sprint(i), StepID: "s", Status: StepCompleted, Output: json.RawMessage(`1`)})
	}
	require.GreaterOrEqual(t, runBytes(r), len(r.Steps)*int(unsafe.Sizeof(StepRecord{})+unsafe.Sizeof(r)))
	var c endedRuns
	c.put(r)
	c.keep(r)
	_, ok := c.get("many")
	require.False(t, ok)
	require.Zero(t, c.bytes)
}
