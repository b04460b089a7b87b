package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

const runCols = `id, workflow_id, workflow, version, environment, status, input, output, error,
	waiting_on, rerun_of, created_at, started_at, finished_at, definition, wake_at, cancel_requested,
	start_token, parent_run_id, depth, claims, started_by, task, acts_for, run_trigger, trace_parent,
	concurrency_key, concurrency_limit`

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
// fit a hook's question (written by MissAsk only), the payloads it left undelivered
// (written by the save that ends it), then stepsCol.
const runSelect = runCols + `, ask_step, ask_misses, undelivered, ` + stepsCol

// notTerminal is the SQL condition for a run that has not ended.
const notTerminal = `status NOT IN ('completed', 'failed', 'cancelled')`

// runRow holds the columns of a run while it is scanned.
type runRow struct {
	run                              runner.Run
	input, output, errJSON, waiting  []byte
	definition, steps, trigger       []byte
	undelivered                      []byte
	created, started, finished, wake int64
	actsFor                          string
	queue                            sql.NullString
	limit                            int
}

// scanRun scans the columns of runSelect.
func scanRun(row scanner) (*runner.Run, error) {
	var x runRow
	r := &x.run
	err := row.Scan(&r.ID, &r.WorkflowID, &r.Workflow, &r.Version, &r.Environment, &r.Status,
		&x.input, &x.output, &x.errJSON, &x.waiting, &r.RerunOf, &x.created, &x.started,
		&x.finished, &x.definition, &x.wake, &r.CancelRequested, &r.StartToken, &r.ParentRunID,
		&r.Depth, &r.Claims, &r.StartedBy, &r.Task, &x.actsFor, &x.trigger, &r.TraceParent, &x.queue, &x.limit, &r.AskMisses.Step, &r.AskMisses.N, &x.undelivered, &x.steps)
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
	if x.queue.Valid {
		r.Concurrency = &runner.Concurrency{Key: x.queue.String, Limit: x.limit}
	}
	var err error
	if r.Error, err = storecodec.DecodeError(x.errJSON); err != nil {
		return err
	}
	if r.WaitingOn, err = storecodec.DecodeWaitingOn(x.waiting); err != nil {
		return err
	}
	if r.Undelivered, err = storecodec.DecodeUndelivered(x.undelivered); err != nil {
		return err
	}
	if r.ActsFor, err = storecodec.DecodeAuthority(x.actsFor); err != nil {
		return err
	}
	if r.Trigger, err = storecodec.DecodeTrigger(x.trigger); err != nil {
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
	st, err := storecodec.EncodeNewRun(r)
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	res := idempotency.ClaimResult{Outcome: idempotency.Claimed}
	var queued bool
	err = s.write(ctx, func(tx *sql.Tx) error {
		if p.Key != nil {
			// err is fn's own: fn may run on another goroutine than the caller's.
			var err error
			if res, err = admitKey(ctx, s.in(tx), p.Key); err != nil || res.Outcome != idempotency.Claimed {
				return err
			}
		}
		var err error
		if queued, err = admitQueued(ctx, s.in(tx), p, st); err != nil {
			return err
		}
		return admitEnd(ctx, s.in(tx), p)
	})
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	out := storecodec.Admitted(p, res)
	out.Queued = queued
	return out, nil
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
// the catalog still stands at p.CatalogVersion (checkedVersion). A run admitted already
// ended is never saved again (it holds no lease, and SaveRun needs one): its steps go in
// its own row, which spares a run_steps page and a statement per step.
func insertRun(ctx context.Context, q querier, p runner.CreateRunParams, st storecodec.RunState) error {
	r, claims := p.Run, 0
	if p.Owner != "" {
		claims = 1
	}
	var steps []byte
	if r.Status.Terminal() {
		steps = stepsArray(st.Steps)
	}
	actsFor, err := storecodec.EncodeAuthority(r.ActsFor)
	if err != nil {
		return err
	}
	var queue sql.NullString
	var limit int
	if c := r.Concurrency; c != nil {
		queue, limit = sql.NullString{String: c.Key, Valid: true}, c.Limit
	}
	_, err = q.ExecContext(ctx, `INSERT INTO runs (`+runCols+`, lease_owner, lease_until, steps)
		VALUES (?, ?, ?, `+checkedVersion+`, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.WorkflowID, r.Workflow, p.CatalogVersion, p.CatalogVersion, r.Version, r.Environment, r.Status, []byte(r.Input),
		[]byte(r.Output), st.Error, st.WaitingOn, r.RerunOf, nanos(r.CreatedAt),
		nanosPtr(r.StartedAt), nanosPtr(r.FinishedAt), []byte(r.Definition), nanos(r.WakeAt),
		r.CancelRequested, r.StartToken, r.ParentRunID, r.Depth, claims, r.StartedBy, r.Task, actsFor, st.Trigger,
		r.TraceParent, queue, limit, p.Owner, nanos(p.LeaseUntil), steps)
	if isNotNull(err) {
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
//
// insertRun knows the refusal by its code alone (SQLITE_CONSTRAINT_NOTNULL), not by the
// column named in its text, as version is the only NOT NULL column of that INSERT that
// can receive NULL: every other NOT NULL column it names is bound a Go string, int, int64
// or bool (the driver binds each as a value, "" as empty text), and those left out take
// their non-NULL defaults; the columns bound []byte, which a nil slice binds as NULL
// (input, output, error, waiting_on, definition, steps), are nullable, and id (TEXT
// PRIMARY KEY, a string) has no NOT NULL to fail; runs has no trigger. A NOT NULL column
// bound []byte here, or a trigger on runs, would break that.
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
// status, environment, task and readability. It walks the index that serves the most of
// the filter (runFilterOf); what that index leaves it checks on each run, examining at most
// limits.MaxRunsExamined (p.Examine) of them.
func (s *Store) ListRuns(ctx context.Context, p runner.ListRunsParams) ([]*runner.Run, string, error) {
	limit, examine := limits.Page(p.Limit), limits.Examined(p.Examine)
	query, args, err := listRunsQuery(p, limit, examine)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.q().QueryContext(ctx, query, args...)
	var runs []*runner.Run
	var stop *storecodec.RunCursor
	if err == nil {
		runs, stop, err = collectListed(rows, limit)
	}
	if err != nil {
		return nil, "", fmt.Errorf("listing runs: %w", unavailable(err))
	}
	return storecodec.RunPage(runs, limit, stop)
}

// collectListed reads the rows of listRunsQuery, until limit+1 runs are found: the runs
// found, then (marked by the last column) the entries at the walk's bound and one past it.
// When both come, the bound stopped the walk first and a run follows: the last run the walk
// examined is returned as a cursor. Rows are read no further than the page needs, so the
// walk (a co-routine) goes no further either.
func collectListed(rows *sql.Rows, limit int) ([]*runner.Run, *storecodec.RunCursor, error) {
	defer rows.Close()
	var runs []*runner.Run
	var last *storecodec.RunCursor
	for len(runs) <= limit && rows.Next() {
		var mark bool
		r, err := scanRun(markedRow{rows, &mark})
		if err != nil {
			return nil, nil, err
		}
		switch {
		case !mark:
			runs = append(runs, r)
		case last == nil:
			c := storecodec.RunCursorOf(r)
			last = &c
		default:
			return runs, last, rows.Err()
		}
	}
	return runs, nil, rows.Err()
}

// markedRow is a row of runSelect and one more column, scanned into mark.
type markedRow struct {
	row  scanner
	mark *bool
}

func (m markedRow) Scan(dest ...any) error { return m.row.Scan(append(dest, m.mark)...) }

// runOrder is the order of every list of runs, which each of its indexes holds.
const runOrder = ` ORDER BY created_at DESC, id DESC`

// listRunsQuery is ListRuns's query for a page of limit examining at most examine runs, and
// its arguments. A filter its index serves whole reads limit+1 runs off that index. Else
// the index's entries are walked, at most examine of them (w, a co-routine that reads the
// index alone, in its order), and each run they lead to is checked: CROSS JOIN keeps w the
// outer loop, so runs come in its order and the walk goes no further than collectListed
// reads. When fewer than limit+1 pass, the second part of the UNION ALL (which
// collectListed does not reach otherwise) adds the runs at the last entry of a full walk
// and one past it, marked: the next page begins after the one, if the other is there.
func listRunsQuery(p runner.ListRunsParams, limit, examine int) (string, []any, error) {
	f := runFilterOf(p)
	if p.Cursor != "" {
		var c storecodec.RunCursor
		if err := storecodec.DecodeCursor(p.Cursor, &c, runner.ErrInvalidCursor); err != nil {
			return "", nil, err
		}
		f.add(true, "(created_at, id) < (?, ?)", c.CreatedAt, c.ID)
	}
	if len(f.rest) == 0 {
		return `SELECT ` + runSelect + `, 0 FROM runs` + where(f.served) + runOrder + ` LIMIT ?`,
			append(f.servedArgs, limit+1), nil
	}
	walk := `(SELECT rowid AS rid FROM runs` + where(f.served) + runOrder + ` LIMIT ?) AS w CROSS JOIN runs ON runs.rowid = w.rid`
	query := `SELECT ` + runSelect + `, 0 FROM ` + walk + where(f.rest) +
		` UNION ALL SELECT ` + runSelect + `, 1 FROM ` + strings.Replace(walk, `LIMIT ?`, `LIMIT 2 OFFSET ?`, 1)
	args := slices.Concat(f.servedArgs, []any{examine}, f.restArgs, f.servedArgs, []any{examine - 1})
	return query, args, nil
}

// where is the WHERE clause of conds, all of them; none → "".
func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return ` WHERE ` + strings.Join(conds, " AND ")
}

// runFilter is a list's conditions split by how they are met: served by the index the list
// walks (each entry it walks passes them), and the rest, checked on each run it reaches.
type runFilter struct {
	served, rest         []string
	servedArgs, restArgs []any
}

func (f *runFilter) add(served bool, cond string, args ...any) {
	if served {
		f.served, f.servedArgs = append(f.served, cond), append(f.servedArgs, args...)
		return
	}
	f.rest, f.restArgs = append(f.rest, cond), append(f.restArgs, args...)
}

// runFilterOf splits p's filter. One index serves it, the first that fits: a principal's
// own tasks in an environment (runs_tasks), a principal's own runs (runs_started_by), a
// workflow's (runs_workflow_created), a status but completed (runs_status_created, which
// leaves completed runs out), else none (runs_created, all runs).
func runFilterOf(p runner.ListRunsParams) runFilter {
	var f runFilter
	own := p.Readable != nil && p.Readable.StartedBy != "" && len(p.Readable.WorkflowIDs) == 0
	tasks := own && p.Task && p.Environment != ""
	workflow := !own && p.WorkflowID != ""
	status := !own && !workflow && p.Status != "" && p.Status != runner.StatusCompleted
	if p.Readable != nil {
		cond, args := readableCond(p.Readable)
		f.add(own || cond == readsNothing, cond, args...)
	}
	if p.WorkflowID != "" {
		f.add(workflow, "workflow_id = ?", p.WorkflowID)
	}
	if p.Status != "" {
		f.add(status, "status = ?", p.Status)
	}
	if status {
		f.add(true, "status != 'completed'") // literal, so that the partial index runs_status_created serves it
	}
	if p.Environment != "" {
		f.add(tasks, "environment = ?", p.Environment)
	}
	if p.Task {
		f.add(tasks, "task = 1") // literal, so that the partial index runs_tasks serves it
	}
	if p.Trigger != "" {
		// As text: SQLite's JSON functions read a BLOB as JSONB first.
		f.add(false, "json_extract(CAST(run_trigger AS TEXT), '$.type') = ?", p.Trigger)
	}
	return f
}

// readableCond is the SQL condition of a runner.Readable: started by the principal, or of
// one of the workflows. The workflows are one argument, a JSON array, however many a
// token's tags grant: one variable each would fail the list past SQLite's bound on them
// (32,766).
func readableCond(f *runner.Readable) (string, []any) {
	var conds []string
	var args []any
	if f.StartedBy != "" {
		conds, args = append(conds, "started_by = ?"), append(args, f.StartedBy)
	}
	if len(f.WorkflowIDs) > 0 {
		ids, _ := json.Marshal(f.WorkflowIDs) // a []string always encodes
		conds, args = append(conds, "workflow_id IN (SELECT value FROM json_each(?))"), append(args, string(ids))
	}
	if len(conds) == 0 {
		return readsNothing, nil
	}
	return "(" + strings.Join(conds, " OR ") + ")", args
}

// readsNothing is readableCond of a filter that admits no run.
const readsNothing = "0"
