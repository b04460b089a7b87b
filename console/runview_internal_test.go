package console

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// TestWaitKindsAndQueue: waitingOn.queue is read from its shape ({key, limit, active, ahead})
// and shown with the runs holding the slots; a kind this console does not know is named,
// harmlessly, and one that is not an object does not break the page.
func TestWaitKindsAndQueue(t *testing.T) {
	t.Parallel()
	q, unknown := waitKinds(json.RawMessage(`{"queue": {"key": "tenant-7", "limit": 2, "active": ["r-1", "r-2"], "ahead": 3},
		"mystery": {"x": "<script>"}, "hook": {"token": "t"}}`))
	require.Equal(t, &queueWait{Key: "tenant-7", Limit: 2, Active: []string{"r-1", "r-2"}, Ahead: 3}, q)
	require.Equal(t, []string{"mystery"}, unknown)
	bad, unknown := waitKinds(json.RawMessage(`{"queue": "soon"}`))
	require.Nil(t, bad)
	require.Equal(t, []string{"queue"}, unknown)

	p, err := loadPages()
	require.NoError(t, err)
	var out bytes.Buffer
	run := &wire.Run{ID: "run-9", Workflow: "w", Status: "queued", CreatedAt: time.Now()}
	require.NoError(t, p.sets["run"].ExecuteTemplate(&out, "layout", layout{Page: runPage{Run: run, Queue: q, Unknown: []string{"<mystery>"}}}))
	html := out.String()
	require.Contains(t, html, `<span id="run-status" class="badge queued"`)
	require.Contains(t, html, "<code>tenant-7</code> (limit 2): 3 runs ahead")
	require.Contains(t, html, `<a href="/console/runs/r-2"><code>r-2</code></a>`)
	require.Contains(t, html, "Waiting on <code>&lt;mystery&gt;</code>")
}

// TestGanttGroups: records under a top-level step (parallel branches, foreach iterations)
// are grouped under it on one time axis, placed by their times.
func TestGanttGroups(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	run := &runner.Run{CreatedAt: t0, StartedAt: at(0), FinishedAt: at(10), Status: runner.StatusCompleted, Steps: []*runner.StepRecord{
		{ID: "each", Status: runner.StepCompleted, StartedAt: at(0), FinishedAt: at(10)},
		{ID: "after", Status: runner.StepCompleted, StartedAt: at(10), FinishedAt: at(10)},
		{ID: "charge", Path: "each/0/charge", Status: runner.StepCompleted, StartedAt: at(0), FinishedAt: at(5)},
		{ID: "charge", Path: "each/1/charge", Status: runner.StepFailed, StartedAt: at(5), FinishedAt: at(10)},
	}}
	g := ganttOf(run, t0.Add(time.Hour))
	require.Equal(t, "10s", g.Span)
	require.Len(t, g.Groups, 2)
	require.Equal(t, []ganttBar{
		{Index: 2, Name: "each/0/charge", Status: "completed", X: "0.00%", W: "50.00%", Took: "5s", Start: at(0), End: at(5)},
		{Index: 3, Name: "each/1/charge", Status: "failed", X: "50.00%", W: "50.00%", Took: "5s", Start: at(5), End: at(10)},
	}, g.Groups[0].Children)
	require.Empty(t, g.Groups[1].Children)
	require.Equal(t, "100.00%", g.Groups[1].Bar.X)
	require.True(t, strings.HasSuffix(g.Groups[1].Bar.W, "%"))
}
