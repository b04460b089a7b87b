package sqlitestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
)

// TestRunStepsInOneRead: GetRun reads the step rows with the run, in index order, and
// refuses stored indexes other than 0 … n-1 (rather than shifting steps into wrong places)
// and a row that is not a step record.
func TestRunStepsInOneRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		indexes []int
		data    string // a stored row, instead of a step record with ID s<index>
		steps   []string
		err     string
	}{
		{name: "no steps"},
		{name: "in order", indexes: []int{1, 0, 2}, steps: []string{"s0", "s1", "s2"}},
		{name: "a gap", indexes: []int{0, 2}, err: "step indexes 0 to 2 for 2 steps"},
		{name: "not from 0", indexes: []int{1, 2}, err: "step indexes 1 to 2 for 2 steps"},
		{name: "not a step record", indexes: []int{0}, data: `{}`, err: "step 0: decoding step: not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openT(t)
			ctx := context.Background()
			r := &runner.Run{ID: "r1", WorkflowID: "w", Workflow: "w", Environment: runner.EnvProduction,
				Status: runner.StatusRunning, CreatedAt: time.Now()}
			_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r})
			require.NoError(t, err)
			for _, i := range tt.indexes {
				data := tt.data
				if data == "" {
					data = fmt.Sprintf(`{"id": "s%d"}`, i)
				}
				_, err := s.db.Exec(`INSERT INTO run_steps (run_id, idx, data) VALUES ('r1', ?, ?)`, i, []byte(data))
				require.NoError(t, err)
			}
			got, err := s.GetRun(ctx, "r1")
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			ids := []string{}
			for _, st := range got.Steps {
				ids = append(ids, st.ID)
			}
			require.Equal(t, append([]string{}, tt.steps...), ids)
		})
	}
}

// TestEndedRunStepsInItsRow: a run admitted already ended writes its step records in its
// own row, no run_steps rows, and reads them back as a run admitted live does from its rows.
func TestEndedRunStepsInItsRow(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	now := time.Now()
	steps := func() []*runner.StepRecord {
		return []*runner.StepRecord{{ID: "a", Status: runner.StepCompleted, Attempts: 1, Output: []byte(`{"n":1}`)},
			{ID: "b", Status: runner.StepSkipped}}
	}
	for _, tc := range []struct {
		id       string
		status   runner.Status
		finished *time.Time
		rows     int
	}{
		{"ended", runner.StatusCompleted, &now, 0},
		{"live", runner.StatusRunning, nil, 2},
	} {
		r := &runner.Run{ID: tc.id, WorkflowID: "w", Workflow: "w", Environment: runner.EnvProduction,
			Status: tc.status, CreatedAt: now, StartedAt: &now, FinishedAt: tc.finished, Steps: steps()}
		_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r})
		require.NoError(t, err)
		var rows int
		require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM run_steps WHERE run_id = ?`, tc.id).Scan(&rows))
		require.Equal(t, tc.rows, rows, tc.id)
		got, err := s.GetRun(ctx, tc.id)
		require.NoError(t, err)
		require.Equal(t, steps(), got.Steps, tc.id)
	}
	runs, _, err := s.ListRuns(ctx, runner.ListRunsParams{})
	require.NoError(t, err)
	require.Len(t, runs, 2)
	for _, r := range runs {
		require.Equal(t, steps(), r.Steps, r.ID)
	}
}
