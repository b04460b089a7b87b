package sqlitestore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
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

// TestListRunsPlans: a list reads the index that serves the most of its filter, in its
// order (no sort), and seeks a cursor in it. A filter the index serves whole reads the page
// off the index; one it does not walks the index alone (a covering co-routine, read only as
// far as the page needs), looks each run up by rowid and checks the rest on it. A list by a
// status other than completed reads the partial index runs_status_created, which it may
// only because its WHERE holds the index's own condition; a list of completed runs, which
// that index leaves out, walks runs_created. A principal's own runs and tasks read their
// ascending indexes backwards, newest first.
func TestListRunsPlans(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	cursor := encodeCursor(t, storecodec.RunCursor{CreatedAt: 5, ID: "r"})
	own := &runner.Readable{StartedBy: "p"}
	for _, tc := range []struct {
		name  string
		p     runner.ListRunsParams
		index string
		walk  bool // the index leaves part of the filter to check on each run
	}{
		{"failed", runner.ListRunsParams{Status: runner.StatusFailed}, "runs_status_created (status=?)", false},
		{"waiting, after a cursor", runner.ListRunsParams{Status: runner.StatusWaiting, Cursor: cursor}, "runs_status_created (status=? AND (created_at,id)<(?,?))", false},
		{"any", runner.ListRunsParams{}, "SCAN runs USING INDEX runs_created", false},
		{"any, after a cursor", runner.ListRunsParams{Cursor: cursor}, "runs_created ((created_at,id)<(?,?))", false},
		{"workflow", runner.ListRunsParams{WorkflowID: "w"}, "runs_workflow_created (workflow_id=?)", false},
		{"own", runner.ListRunsParams{Readable: own}, "runs_started_by (started_by=?)", false},
		{"own, after a cursor", runner.ListRunsParams{Readable: own, Cursor: cursor}, "runs_started_by (started_by=? AND (created_at,id)<(?,?))", false},
		{"own tasks", runner.ListRunsParams{Readable: own, Environment: runner.EnvProduction, Task: true}, "runs_tasks (started_by=? AND environment=?)", false},
		{"completed", runner.ListRunsParams{Status: runner.StatusCompleted}, "SCAN runs USING COVERING INDEX runs_created", true},
		{"completed, after a cursor", runner.ListRunsParams{Status: runner.StatusCompleted, Cursor: cursor}, "COVERING INDEX runs_created ((created_at,id)<(?,?))", true},
		{"workflow and status", runner.ListRunsParams{WorkflowID: "w", Status: runner.StatusFailed}, "COVERING INDEX runs_workflow_created (workflow_id=?)", true},
		{"status and environment", runner.ListRunsParams{Status: runner.StatusFailed, Environment: runner.EnvTest}, "COVERING INDEX runs_status_created (status=?)", true},
		{"environment", runner.ListRunsParams{Environment: runner.EnvTest}, "SCAN runs USING COVERING INDEX runs_created", true},
		{"tasks", runner.ListRunsParams{Task: true}, "SCAN runs USING COVERING INDEX runs_created", true},
		{"own completed", runner.ListRunsParams{Readable: own, Status: runner.StatusCompleted}, "COVERING INDEX runs_started_by (started_by=?)", true},
		{"own or a workflow's", runner.ListRunsParams{Readable: &runner.Readable{StartedBy: "p", WorkflowIDs: []string{"w"}}}, "SCAN runs USING COVERING INDEX runs_created", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			query, args, err := listRunsQuery(tc.p, 10, 100)
			require.NoError(t, err)
			plan := explain(t, s, query, args...)
			for _, step := range plan {
				require.NotContains(t, step, "TEMP B-TREE FOR ORDER BY", "%q", plan)
			}
			if !tc.walk {
				require.Contains(t, plan[0], tc.index, "%q", plan)
				return
			}
			// both parts of the UNION ALL walk the index alone, then look up each run
			require.Equal(t, []string{"COMPOUND QUERY", "LEFT-MOST SUBQUERY", "CO-ROUTINE w"}, plan[:3], "%q", plan)
			require.Contains(t, plan[3], tc.index, "%q", plan)
			require.Equal(t, []string{"SCAN w", "SEARCH runs USING INTEGER PRIMARY KEY (rowid=?)"}, plan[4:6], "%q", plan)
			second := slices.Index(plan, "UNION ALL")
			require.Equal(t, plan[2:6], plan[second+1:second+5], "%q", plan)
		})
	}
}

// explain returns the detail of each step of query's plan.
func explain(t *testing.T, s *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return plan
}

func encodeCursor(t *testing.T, c storecodec.RunCursor) string {
	t.Helper()
	s, err := storecodec.EncodeCursor(c)
	require.NoError(t, err)
	return s
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

// TestStaleCatalogByCode: insertRun knows a stale catalog by the NOT NULL code alone,
// which is exact only while version is the one NOT NULL column its INSERT can make NULL:
// a run whose every []byte is nil (bound NULL) is written at the catalog version that
// stands, runs has no trigger, another refusal of that INSERT (a run ID taken) is not
// reported as a stale catalog, and a version the catalog moved from is.
func TestStaleCatalogByCode(t *testing.T) {
	t.Parallel()
	s, _ := openT(t)
	ctx := context.Background()
	bump := func(id string) int64 {
		t.Helper()
		require.NoError(t, s.CreateWorkflow(ctx, &catalog.Workflow{ID: id, Name: id, Rev: 1, WebhookDigest: "wh-" + id,
			Definition: []byte(`{"name":"` + id + `","steps":[]}`), CreatedAt: time.Now(), UpdatedAt: time.Now()}))
		v, err := s.CatalogVersion(ctx)
		require.NoError(t, err)
		return v
	}
	at := bump("w1")
	now := time.Now()
	bare := func(id string, status runner.Status) *runner.Run {
		r := &runner.Run{ID: id, WorkflowID: "w1", Workflow: "w1", Environment: runner.EnvProduction, Status: status, CreatedAt: now}
		if status.Terminal() {
			r.FinishedAt = &now
		}
		return r
	}
	for _, r := range []*runner.Run{bare("live", runner.StatusPending), bare("ended", runner.StatusCompleted)} {
		_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r, CatalogVersion: at})
		require.NoError(t, err, "%s: nil []byte fields bind NULL into nullable columns only", r.ID)
	}
	var triggers int
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'runs'`).Scan(&triggers))
	require.Zero(t, triggers, "a trigger on runs could fail NOT NULL elsewhere")

	_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: bare("live", runner.StatusPending), CatalogVersion: at})
	require.Error(t, err)
	require.NotErrorIs(t, err, runner.ErrStaleCatalog, "a run ID taken is not a stale catalog")

	bump("w2")
	_, err = s.CreateRun(ctx, runner.CreateRunParams{Run: bare("stale", runner.StatusPending), CatalogVersion: at})
	require.ErrorIs(t, err, runner.ErrStaleCatalog)
}
