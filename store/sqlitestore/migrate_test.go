package sqlitestore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// TestMigrateStepsToRows opens a database made by the first schema, whose runs kept their
// steps as one JSON array, and checks that the steps come back one row each and that a
// partial save then works.
func TestMigrateStepsToRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	initSQL, err := os.ReadFile("migrations/0001_init.sql")
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, string(initSQL))
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);
		INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 0)`)
	require.NoError(t, err)
	steps := `[{"id":"a","stepId":"r/a","status":"completed","attempts":1,"output":{"n":1},"state":{"k":"v"}},
		{"id":"b","stepId":"r/b","status":"pending","attempts":0}]`
	_, err = db.ExecContext(ctx, `INSERT INTO runs (id, workflow_id, workflow, version, environment, status,
		input, output, steps, created_at, wake_at) VALUES ('r', 'wf', 'wf', 1, 'production', 'running',
		'{}', 'null', CAST(? AS BLOB), 1, 1), ('bare', 'wf', 'wf', 1, 'production', 'pending', '{}', 'null', NULL, 2, 0)`, steps)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s := open(t, path)
	r, err := s.GetRun(ctx, "r")
	require.NoError(t, err)
	require.Len(t, r.Steps, 2)
	require.Equal(t, "a", r.Steps[0].ID)
	require.JSONEq(t, `{"n":1}`, string(r.Steps[0].Output))
	require.JSONEq(t, `{"k":"v"}`, string(r.Steps[0].State))
	require.Equal(t, runner.StepPending, r.Steps[1].Status)
	bare, err := s.GetRun(ctx, "bare")
	require.NoError(t, err)
	require.Empty(t, bare.Steps)
	require.False(t, bare.Task, "a run from before is not a task")

	claimed, err := s.ClaimRuns(ctx, runner.ClaimRunsParams{Owner: "A", Now: time.Unix(0, 5), LeaseUntil: time.Now().Add(time.Hour), Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	r = claimed[0].Run
	r.Steps[1].Status, r.Steps[1].Output = runner.StepCompleted, json.RawMessage(`2`)
	require.NoError(t, s.SaveRun(ctx, claimed[0].Lease, r, runner.SaveOptions{Steps: []int{1}}))
	r, err = s.GetRun(ctx, "r")
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(r.Steps[0].Output))
	require.JSONEq(t, `2`, string(r.Steps[1].Output))

	_, err = sqlitestore.Open(ctx, path)
	require.NoError(t, err, "reopening applies nothing twice")
}

// TestMigrateEndedRunsLean opens a database at the schema before migration 13, holding
// runs of every kind with their steps in run_steps, and finds them read the same, their
// steps and each list by status, page by page and in order, with runs written after the
// migration (whose ended runs keep their steps in their own row, and whose completed runs
// are in no status index).
func TestMigrateEndedRunsLean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v12.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	require.NoError(t, err)
	names, err := filepath.Glob("migrations/00*.sql")
	require.NoError(t, err)
	for v, name := range names[:12] {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, string(b))
		require.NoError(t, err, name)
		_, err = db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 0)`, v+1, filepath.Base(name))
		require.NoError(t, err)
	}
	for i, status := range []runner.Status{runner.StatusCompleted, runner.StatusFailed, runner.StatusRunning, runner.StatusCompleted} {
		id := fmt.Sprintf("old%d", i)
		_, err = db.ExecContext(ctx, `INSERT INTO runs (id, workflow_id, workflow, version, environment, status,
			input, output, created_at) VALUES (?, 'wf', 'wf', 1, 'production', ?, '{}', 'null', ?)`, id, status, i+1)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `INSERT INTO run_steps (run_id, idx, data) VALUES (?, 0, ?), (?, 1, ?)`,
			id, []byte(`{"id":"a","status":"completed","attempts":1}`), id, []byte(`{"id":"b","status":"pending"}`))
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())

	s := open(t, path)
	now := time.Unix(0, 10)
	for i, status := range []runner.Status{runner.StatusCompleted, runner.StatusFailed} {
		r := &runner.Run{ID: fmt.Sprintf("new%d", i), WorkflowID: "wf", Workflow: "wf", Environment: runner.EnvProduction,
			Status: status, CreatedAt: now.Add(time.Duration(i)), StartedAt: &now, FinishedAt: &now,
			Steps: []*runner.StepRecord{{ID: "a", Status: runner.StepCompleted, Attempts: 1}}}
		_, err := s.CreateRun(ctx, runner.CreateRunParams{Run: r})
		require.NoError(t, err)
	}
	for _, id := range []string{"old0", "old1", "old2", "old3"} {
		r, err := s.GetRun(ctx, id)
		require.NoError(t, err)
		require.Len(t, r.Steps, 2, id)
		require.Equal(t, []string{"a", "b"}, []string{r.Steps[0].ID, r.Steps[1].ID}, id)
		require.Equal(t, runner.StepPending, r.Steps[1].Status, id)
	}
	for status, want := range map[runner.Status][]string{
		"":                     {"new1", "new0", "old3", "old2", "old1", "old0"},
		runner.StatusCompleted: {"new0", "old3", "old0"},
		runner.StatusFailed:    {"new1", "old1"},
		runner.StatusRunning:   {"old2"},
	} {
		var got []string
		p := runner.ListRunsParams{Status: status, Limit: 1}
		for {
			runs, next, err := s.ListRuns(ctx, p)
			require.NoError(t, err)
			for _, r := range runs {
				require.NotEmpty(t, r.Steps, r.ID)
				got = append(got, r.ID)
			}
			if next == "" {
				break
			}
			p.Cursor = next
		}
		require.Equal(t, want, got, "status %q, a page of one at a time", status)
	}
}
