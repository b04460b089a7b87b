package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

const runCols = `id, workflow_id, workflow, version, environment, status, input, output, error,
	waiting_on, rerun_of, created_at, started_at, finished_at, definition, wake_at, cancel_requested,
	start_token, parent_run_id, depth, claims, started_by, task`

// stepsCol reads a run's step records as one JSON array: its own steps column, for a run
// admitted already ended (see insertRun), else its run_steps rows (one each) in the
// correlated subquery that lets one statement read a run with its steps; coalesce runs the
// subquery only when the column is NULL. Each row is a JSON object (storecodec.EncodeStep),
// so joining them needs no JSON parsing in SQLite. Indexes other than exactly 0 … n-1 yield
// a text that is not an array (no steps: NULL).
const stepsCol = `coalesce(runs.steps, (SELECT CASE WHEN min(idx) = 0 AND max(idx) = count(*) - 1
		THEN '[' || group_concat(data, ',' ORDER BY idx) || ']'
		ELSE 'step indexes ' || min(idx) || ' to ' || max(idx) || ' for ' || count(*) || ' steps' END
	FROM run_steps WHERE run_steps.run_id = runs.id))`

// runSelect is what a read of runs selects: runCols, the count of answers that did not
// fit a hook's question (written by MissAsk only), then stepsCol.
const runSelect = runCols + `, ask_step, ask_misses, ` + stepsCol

// notTerminal is the SQL condition for a run that has not ended.
const notTerminal = `status NOT IN ('completed', 'failed', 'cancelled')`

// runRow holds the columns of a run while it is scanned.
type runRow struct {
	run                              runner.Run
	input, output, errJSON, waiting  []byte
	definition, steps                []byte
	created, started, finished, wake int64
}

// scanRun scans the columns of runSelect.
func scanRun(row scanner) (*runner.Run, error) {
	var x runRow
	r := &x.run
	err := row.Scan(&r.ID, &r.WorkflowID, &r.Workflow, &r.Version, &r.Environment, &r.Status,
		&x.input, &x.output, &x.errJSON, &x.waiting, &r.RerunOf, &x.created, &x.started,
		&x.finished, &x.definition, &x.wake, &r.CancelRequested, &r.StartToken, &r.ParentRunID,
		&r.Depth, &r.Claims, &r.StartedBy, &r.Task, &r.AskMisses.Step, &r.AskMisses.N, &x.steps)
	if err != nil {
		return nil, err
	}
	if err := x.decode(); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", r.ID, err)
	}
	return r, nil
}

func (x *runRow) decode() error {
	r := &x.run
	r.Input, r.Output, r.Definition = x.input, x.output, x.definition
	r.CreatedAt, r.StartedAt, r.FinishedAt = fromNanos(x.created), fromNanosPtr(x.started), fromNanosPtr(x.finished)
	r.WakeAt = fromNanos(x.wake)
	var err error
	if r.Error, err = storecodec.DecodeError(x.errJSON); err != nil {
		return err
	}
	if r.WaitingOn, err = storecodec.DecodeWaitingOn(x.waiting); err != nil {
		return err
	}
	r.Steps, err = decodeSteps(x.steps)
	return err
}

// decodeSteps reads stepsCol: each element is checked by storecodec.DecodeStep, which
// refuses a row that is not a step record.
func decodeSteps(b []byte) ([]*runner.StepRecord, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != '[' {
		return nil, fmt.Errorf("reading steps: %s", b)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("reading steps: %w", err)
	}
	steps := make([]*runner.StepRecord, len(rows))
	for i, row := range rows {
		st, err := storecodec.DecodeStep(row)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		steps[i] = st
	}
	return steps, nil
}

// writeSteps upserts the encoded step records of run id, one row each.
func writeSteps(ctx context.Context, q querier, id string, steps []storecodec.EncodedStep) error {
	for _, st := range steps {
		_, err := q.ExecContext(ctx, `INSERT INTO run_steps (run_id, idx, data) VALUES (?, ?, ?)
			ON CONFLICT (run_id, idx) DO UPDATE SET data = excluded.data`, id, st.Index, st.Data)
		if err != nil {
			return fmt.Errorf("writing step %d: %w", st.Index, err)
		}
	}
	return nil
}

// CreateRun admits p.Run, due at its WakeAt, in one write transaction with its key (if
// any: a live key or a full scope → that outcome, nothing written), its start token (owned
// by another run → *runner.TokenConflictError, nothing written) and its lease (if any).
func (s *Store) CreateRun(ctx context.Context, p runner.CreateRunParams) (runner.CreateRunResult, error) {
	if err := p.Check(); err != nil {
		return runner.CreateRunResult{}, err
	}
	r := p.Run
	st, err := storecodec.EncodeRunState(r, nil)
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	res := idempotency.ClaimResult{Outcome: idempotency.Claimed}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if p.Key != nil {
			// err is fn's own: the caller's err is not written from the committer goroutine.
			var err error
			if res, err = admitKey(ctx, s.in(tx), p.Key); err != nil || res.Outcome != idempotency.Claimed {
				return err
			}
		}
		if err := insertRun(ctx, s.in(tx), p, st); err != nil {
			return err
		}
		return admitEnd(ctx, s.in(tx), p)
	})
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	return storecodec.Admitted(p, res), nil
}

// admitEnd claims a new run's start token, if it has one. A run admitted already ended
// holds no token (its token is only checked: owned by another run, nothing is written)
// and has its parent, if any, woken as SaveRun's end would.
func admitEnd(ctx context.Context, q querier, p runner.CreateRunParams) error {
	r := p.Run
	if p.Start != nil {
		h := *p.Start
		if h.RunID == "" {
			h.RunID = r.ID
		}
		claim := claimToken
		if r.Status.Terminal() {
			claim = checkToken
		}
		if err := claim(ctx, q, &h); err != nil {
			return err
		}
	}
	if !r.Status.Terminal() || r.ParentRunID == "" {
		return nil
	}
	if _, err := wakeRun(ctx, q, r.ParentRunID, *r.FinishedAt); err != nil {
		return fmt.Errorf("waking parent %s: %w", r.ParentRunID, err)
	}
	return nil
}

// insertRun writes a new run's row, leased to p.Owner when set, and its step records, if
// the catalog still stands at p.CatalogVersion (checkedVersion). A run admitted already ended is never saved again (it holds no lease, and SaveRun needs one):
// its steps go in its own row, which spares a run_steps page and a statement per step.
func insertRun(ctx context.Context, q querier, p runner.CreateRunParams, st storecodec.RunState) error {
	r, claims := p.Run, 0
	if p.Owner != "" {
		claims = 1
	}
	var steps []byte
	if r.Status.Terminal() {
		steps = stepsArray(st.Steps)
	}
	_, err := q.ExecContext(ctx, `INSERT INTO runs (`+runCols+`, lease_owner, lease_until, steps)
		VALUES (?, ?, ?, `+checkedVersion+`, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.WorkflowID, r.Workflow, p.CatalogVersion, p.CatalogVersion, r.Version, r.Environment, r.Status, []byte(r.Input),
		[]byte(r.Output), st.Error, st.WaitingOn, r.RerunOf, nanos(r.CreatedAt),
		nanosPtr(r.StartedAt), nanosPtr(r.FinishedAt), []byte(r.Definition), nanos(r.WakeAt),
		r.CancelRequested, r.StartToken, r.ParentRunID, r.Depth, claims, r.StartedBy, r.Task,
		p.Owner, nanos(p.LeaseUntil), steps)
	if isNotNull(err, "runs.version") {
		return runner.ErrStaleCatalog
	}
	if err != nil || steps != nil {
		return err
	}
	return writeSteps(ctx, q, r.ID, st.Steps)
}

// checkedVersion is the run's version in insertRun, given the admission's catalog version
// (twice) and the run's version: an admission resolved at a catalog version (not 0) that
// no longer stands writes NULL, which the column's NOT NULL refuses, and insertRun answers
// runner.ErrStaleCatalog. The check rides in the INSERT: a separate read of the counter
// cost more than the scalar subquery.
const checkedVersion = `CASE WHEN ? = 0 OR ? = (SELECT value FROM counters WHERE name = 'catalog_version') THEN ? END`

// stepsArray joins every step record of a run (indexes 0 … n-1, in order) into the JSON
// array stepsCol reads; nil for none.
func stepsArray(steps []storecodec.EncodedStep) []byte {
	if len(steps) == 0 {
		return nil
	}
	n := 1
	for _, st := range steps {
		n += len(st.Data) + 1
	}
	b := append(make([]byte, 0, n), '[')
	for i, st := range steps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, st.Data...)
	}
	return append(b, ']')
}

// GetRun returns a run with its steps; unknown → runner.ErrNotFound. It is one statement,
// so it reads one snapshot without a transaction.
func (s *Store) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	return getRun(ctx, s.q(), id)
}

func getRun(ctx context.Context, q querier, id string) (*runner.Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runSelect+` FROM runs WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("getting run %s: %w", id, mapErr(err, runner.ErrNotFound, nil))
	}
	return r, nil
}

// ListRuns lists runs newest first (created_at, then ID, descending), filtered by workflow,
// status, environment, task and readability.
func (s *Store) ListRuns(ctx context.Context, p runner.ListRunsParams) ([]*runner.Run, string, error) {
	query, args, err := listRunsQuery(p)
	if err != nil {
		return nil, "", err
	}
	limit := limits.Page(p.Limit)
	rows, err := s.q().QueryContext(ctx, query, append(args, limit+1)...)
	var runs []*runner.Run
	if err == nil {
		runs, err = collect(rows, scanRun)
	}
	if err != nil {
		return nil, "", fmt.Errorf("listing runs: %w", unavailable(err))
	}
	return storecodec.RunPage(runs, limit)
}

// listRunsQuery is ListRuns's query and its arguments but the last, the limit.
func listRunsQuery(p runner.ListRunsParams) (string, []any, error) {
	var where []string
	var args []any
	if p.Readable != nil {
		cond, cargs := readableCond(p.Readable)
		where, args = append(where, cond), append(args, cargs...)
	}
	if p.WorkflowID != "" {
		where, args = append(where, "workflow_id = ?"), append(args, p.WorkflowID)
	}
	if p.Status != "" {
		where, args = append(where, "status = ?"), append(args, p.Status)
	}
	if p.Status != "" && p.Status != runner.StatusCompleted {
		// literal, so that the partial index runs_status_created serves it; completed runs
		// are not in it, and a list of them walks runs_created
		where = append(where, "status != 'completed'")
	}
	if p.Environment != "" {
		where, args = append(where, "environment = ?"), append(args, p.Environment)
	}
	if p.Task {
		where = append(where, "task = 1") // literal, so that the partial index runs_tasks serves it
	}
	if p.Cursor != "" {
		var c storecodec.RunCursor
		if err := storecodec.DecodeCursor(p.Cursor, &c, runner.ErrInvalidCursor); err != nil {
			return "", nil, err
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, c.CreatedAt, c.CreatedAt, c.ID)
	}
	query := `SELECT ` + runSelect + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return query + ` ORDER BY created_at DESC, id DESC LIMIT ?`, args, nil
}

// readableCond is the SQL condition of a runner.Readable: started by the principal, or of
// one of the workflows.
func readableCond(f *runner.Readable) (string, []any) {
	var conds []string
	var args []any
	if f.StartedBy != "" {
		conds, args = append(conds, "started_by = ?"), append(args, f.StartedBy)
	}
	if len(f.WorkflowIDs) > 0 {
		conds = append(conds, "workflow_id IN (?"+strings.Repeat(", ?", len(f.WorkflowIDs)-1)+")")
		for _, id := range f.WorkflowIDs {
			args = append(args, id)
		}
	}
	if len(conds) == 0 {
		return "0", nil
	}
	return "(" + strings.Join(conds, " OR ") + ")", args
}
