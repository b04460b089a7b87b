package mcpserver

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestQueuedTask: a queued run's task is working, and its statusMessage says it is queued
// under its concurrency key.
func TestQueuedTask(t *testing.T) {
	s := &Server{}
	run := &runner.Run{ID: "r", Status: runner.StatusQueued, CreatedAt: time.Now(),
		Concurrency: &runner.Concurrency{Key: "acme", Limit: 2}}
	task := s.taskAt(run, position{})
	require.Equal(t, mcp.TaskStatusWorking, task.Status)
	require.Equal(t, `queued: waiting for one of the 2 slots of concurrency key "acme"`, task.StatusMessage)
}
