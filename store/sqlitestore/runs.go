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
	start_token, parent_run_id, depth, claims, started_by`

// notTerminal is the SQL condition for a run that has not ended.
const notTerminal = `status NOT IN ('completed', 'failed', 'cancelled')`

// runRow holds the columns of a run while it is scanned.
type runRow struct {
	run                              runner.Run
	input, output, errJSON, waiting  []byte
	definition                       []byte
	created, started, finished, wake int64
}

func scanRun(row scanner) (*runner.Run, error) {
	var x runRow
	r := &x.run
	err := row.Scan(&r.ID, &r.WorkflowID, &r.Workflow, &r.Version, &r.Environment, &r.Status,
		&x.input, &x.output, &x.errJSON, &x.waiting, &r.RerunOf, &x.created, &x.started,
		&x.finished, &x.definition, &x.wake, &r.CancelRequested, &r.StartToken, &r.ParentRunID,
		&r.Depth, &r.Claims, &r.StartedBy)
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
	if r.Error, err = unmarshalOrNil[runner.Error](x.errJSON); err != nil {
		return err
	}
	r.WaitingOn, err = unmarshalOrNil[runner.WaitingOn](x.waiting)
	return err
}

// writeSteps upserts the encoded step records of run id, one row each.
func writeSteps(ctx context.Context, tx *sql.Tx, id string, steps []storecodec.EncodedStep) error {
	if len(steps) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO run_steps (run_id, idx, data) VALUES (?, ?, ?)
		ON CONFLICT (run_id, idx) DO UPDATE SET data = excluded.data`)
	if err != nil {
		return fmt.Errorf("writing steps: %w", err)
	}
	defer stmt.Close()
	for _, st := range steps {
		if _, err := stmt.ExecContext(ctx, id, st.Index, st.Data); err != nil {
			return fmt.Errorf("writing step %d: %w", st.Index, err)
		}
	}
	return nil
}

// loadSteps reads the step records of runs in one query.
func loadSteps(ctx context.Context, q querier, runs ...*runner.Run) error {
	if len(runs) == 0 {
		return nil
	}
	byID := make(map[string]map[int][]byte, len(runs))
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
		byID[r.ID] = map[int][]byte{}
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	rows, err := q.QueryContext(ctx, `SELECT run_id, idx, data FROM run_steps
		WHERE run_id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return fmt.Errorf("reading steps: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var idx int
		var data []byte
		if err := rows.Scan(&id, &idx, &data); err != nil {
			return fmt.Errorf("reading steps: %w", err)
		}
		byID[id][idx] = data
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading steps: %w", err)
	}
	for _, r := range runs {
		if r.Steps, err = storecodec.DecodeStepRows(byID[r.ID]); err != nil {
			return fmt.Errorf("decoding run %s: %w", r.ID, err)
		}
	}
	return nil
}

// CreateRun admits p.Run, due at its WakeAt, in one write transaction with its key (if
// any: a live key or a full scope → that outcome, nothing written), its start token (owned
// by another run → *runner.TokenConflictError, nothing written) and its lease (if any).
func (s *Store) CreateRun(ctx context.Context, p runner.CreateRunParams) (idempotency.ClaimResult, error) {
	r := p.Run
	st, err := storecodec.EncodeRunState(r, nil)
	if err != nil {
		return idempotency.ClaimResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	res := idempotency.ClaimResult{Outcome: idempotency.Claimed}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if p.Key != nil {
			if res, err = admitKey(ctx, tx, p.Key); err != nil || res.Outcome != idempotency.Claimed {
				return err
			}
		}
		if err := insertRun(ctx, tx, p, st); err != nil {
			return err
		}
		if p.Start == nil {
			return nil
		}
		h := *p.Start
		if h.RunID == "" {
			h.RunID = r.ID
		}
		return claimToken(ctx, tx, &h)
	})
	if err != nil {
		return idempotency.ClaimResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	return res, nil
}

// insertRun writes a new run's row, leased to p.Owner when set, and its step records.
func insertRun(ctx context.Context, tx *sql.Tx, p runner.CreateRunParams, st storecodec.RunState) error {
	r, claims := p.Run, 0
	if p.Owner != "" {
		claims = 1
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO runs (`+runCols+`, lease_owner, lease_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.WorkflowID, r.Workflow, r.Version, r.Environment, r.Status, []byte(r.Input),
		[]byte(r.Output), st.Error, st.WaitingOn, r.RerunOf, nanos(r.CreatedAt),
		nanosPtr(r.StartedAt), nanosPtr(r.FinishedAt), []byte(r.Definition), nanos(r.WakeAt),
		r.CancelRequested, r.StartToken, r.ParentRunID, r.Depth, claims, r.StartedBy,
		p.Owner, nanos(p.LeaseUntil))
	if err != nil {
		return err
	}
	return writeSteps(ctx, tx, r.ID, st.Steps)
}

// GetRun returns a run with its steps; unknown → runner.ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	var r *runner.Run
	err := s.read(ctx, func(q querier) error {
		var err error
		r, err = getRun(ctx, q, id)
		return err
	})
	return r, err
}

func getRun(ctx context.Context, q querier, id string) (*runner.Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if err == nil {
		err = loadSteps(ctx, q, r)
	}
	if err != nil {
		return nil, fmt.Errorf("getting run %s: %w", id, mapErr(err, runner.ErrNotFound, nil))
	}
	return r, nil
}

// runCursor is the sort key of ListRuns: creation time, then ID, both descending.
type runCursor struct {
	CreatedAt int64  `json:"t"`
	ID        string `json:"i"`
}

// ListRuns lists runs newest first (created_at, then ID, descending), filtered by workflow,
// status and readability.
func (s *Store) ListRuns(ctx context.Context, p runner.ListRunsParams) ([]*runner.Run, string, error) {
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
	if p.Cursor != "" {
		var c runCursor
		if err := storecodec.DecodeCursor(p.Cursor, &c, runner.ErrInvalidCursor); err != nil {
			return nil, "", err
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, c.CreatedAt, c.CreatedAt, c.ID)
	}
	query := `SELECT ` + runCols + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := limits.Page(p.Limit)
	var runs []*runner.Run
	err := s.read(ctx, func(q querier) error {
		rows, err := q.QueryContext(ctx, query+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit+1)...)
		if err != nil {
			return err
		}
		if runs, err = collect(rows, scanRun); err != nil {
			return err
		}
		return loadSteps(ctx, q, runs...)
	})
	if err != nil {
		return nil, "", fmt.Errorf("listing runs: %w", err)
	}
	if len(runs) <= limit {
		return runs, "", nil
	}
	runs = runs[:limit]
	last := runs[limit-1]
	next, err := storecodec.EncodeCursor(runCursor{CreatedAt: nanos(last.CreatedAt), ID: last.ID})
	return runs, next, err
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
