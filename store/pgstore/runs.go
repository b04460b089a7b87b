package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

const runCols = `id, workflow_id, workflow, version, environment, status, input, output, error,
	waiting_on, rerun_of, created_at, started_at, finished_at, definition, wake_at, cancel_requested,
	start_token, parent_run_id, depth, claims, started_by, task, acts_for, run_trigger, trace_parent, ask_step, ask_misses,
	concurrency_key, concurrency_limit`

// runSelect is what a read of runs selects: runCols, the payloads the run left undelivered
// (written by the save that ends it), then the run's step records, their indexes and their
// encodings in index order, read with the run in one statement.
const runSelect = runCols + `, undelivered,
	ARRAY(SELECT idx FROM run_steps WHERE run_steps.run_id = runs.id ORDER BY idx),
	ARRAY(SELECT data FROM run_steps WHERE run_steps.run_id = runs.id ORDER BY idx)`

// notTerminal is the SQL condition for a run that has not ended.
const notTerminal = `status NOT IN ('completed', 'failed', 'cancelled')`

// scanRun scans the columns of runSelect.
func scanRun(row pgx.Row) (*runner.Run, error) {
	var r runner.Run
	var input, output, errJSON, waiting, definition []byte
	var created, started, finished, wake int64
	var actsFor string
	var trigger, undelivered []byte
	var indexes []int
	var steps [][]byte
	var queue *string
	var limit int
	err := row.Scan(&r.ID, &r.WorkflowID, &r.Workflow, &r.Version, &r.Environment, &r.Status,
		&input, &output, &errJSON, &waiting, &r.RerunOf, &created, &started,
		&finished, &definition, &wake, &r.CancelRequested, &r.StartToken, &r.ParentRunID,
		&r.Depth, &r.Claims, &r.StartedBy, &r.Task, &actsFor, &trigger, &r.TraceParent, &r.AskMisses.Step, &r.AskMisses.N, &queue, &limit, &undelivered, &indexes, &steps)
	if err != nil {
		return nil, err
	}
	r.Input, r.Output, r.Definition = input, output, definition
	r.CreatedAt, r.StartedAt, r.FinishedAt = fromNanos(created), fromNanosPtr(started), fromNanosPtr(finished)
	r.WakeAt = fromNanos(wake)
	if queue != nil {
		r.Concurrency = &runner.Concurrency{Key: *queue, Limit: limit}
	}
	if r.Error, err = storecodec.DecodeError(errJSON); err == nil {
		r.WaitingOn, err = storecodec.DecodeWaitingOn(waiting)
	}
	if err == nil {
		r.ActsFor, err = storecodec.DecodeAuthority(actsFor)
	}
	if err == nil {
		r.Trigger, err = storecodec.DecodeTrigger(trigger)
	}
	if err == nil {
		r.Undelivered, err = storecodec.DecodeUndelivered(undelivered)
	}
	if err == nil {
		r.Steps, err = decodeSteps(indexes, steps)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", r.ID, err)
	}
	return &r, nil
}

// decodeSteps reads a run's step rows, their indexes beside their encodings.
func decodeSteps(indexes []int, steps [][]byte) ([]*runner.StepRecord, error) {
	rows := make(map[int][]byte, len(steps))
	for i, idx := range indexes {
		rows[idx] = steps[i]
	}
	return storecodec.DecodeStepRows(rows)
}

// writeSteps upserts the encoded step records of run id, all in one statement.
func writeSteps(ctx context.Context, q querier, id string, steps []storecodec.EncodedStep) error {
	if len(steps) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, upsertSteps, stepsArgs(id, steps)...); err != nil {
		return fmt.Errorf("writing steps: %w", err)
	}
	return nil
}

// upsertSteps writes a run's step records ($1 the run, $2 their indexes, $3 their data).
const upsertSteps = `INSERT INTO run_steps (run_id, idx, data) SELECT $1, i, d FROM unnest($2::integer[], $3::bytea[]) AS s (i, d)
	ON CONFLICT (run_id, idx) DO UPDATE SET data = excluded.data`

// stepsArgs are upsertSteps's arguments for steps of run id.
func stepsArgs(id string, steps []storecodec.EncodedStep) []any {
	indexes, data := make([]int32, len(steps)), make([][]byte, len(steps))
	for i, st := range steps {
		indexes[i], data[i] = int32(st.Index), st.Data
	}
	return []any{id, indexes, data}
}

// CreateRun admits p.Run, due at its WakeAt, in one transaction with its key (if any: a
// live key or a full scope → that outcome, nothing written), its start token (owned by
// another run → *runner.TokenConflictError, nothing written) and its lease (if any). An
// admission with neither key nor start token decides nothing on what it reads, so its
// statements are sent at once (admitPipelined).
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
	if p.Key == nil && p.Start == nil && r.Concurrency == nil {
		err = s.admitPipelined(ctx, p, st)
	} else {
		err = s.write(ctx, func(q querier) error {
			if p.Key != nil {
				var err error
				if res, err = s.takeKey(ctx, q, p.Key.Claim, p.Key.Answer); err != nil || res.Outcome != idempotency.Claimed {
					return err
				}
			}
			var err error
			if queued, err = s.admitQueued(ctx, q, p, st); err != nil {
				return err
			}
			return admitEnd(ctx, q, p)
		})
	}
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	out := storecodec.Admitted(p, res)
	out.Queued = queued
	return out, nil
}

// admitPipelined writes an admission with neither key nor start token (its run, its
// steps, its parent's wake-up when it ended) as one batch: one round trip, run by the
// server as one implicit transaction, so that a statement that fails (a stale catalog)
// undoes the others.
func (s *Store) admitPipelined(ctx context.Context, p runner.CreateRunParams, st storecodec.RunState) error {
	r := p.Run
	args, err := runArgs(p, st)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(insertRunSQL, args...)
	if len(st.Steps) > 0 {
		b.Queue(upsertSteps, stepsArgs(r.ID, st.Steps)...)
	}
	if r.Status.Terminal() && r.ParentRunID != "" {
		b.Queue(wakeRunSQL, nanos(*r.FinishedAt), r.ParentRunID)
	}
	err = s.pool.SendBatch(ctx, b).Close()
	if hasCode(err, codeNotNull) {
		return runner.ErrStaleCatalog
	}
	return unreachable(ctx, err)
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
// the catalog still stands at p.CatalogVersion (checkedVersion).
func insertRun(ctx context.Context, q querier, p runner.CreateRunParams, st storecodec.RunState) error {
	args, err := runArgs(p, st)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, insertRunSQL, args...)
	if hasCode(err, codeNotNull) {
		return runner.ErrStaleCatalog
	}
	if err != nil {
		return err
	}
	return writeSteps(ctx, q, p.Run.ID, st.Steps)
}

// insertRunSQL writes a new run's row (runArgs).
const insertRunSQL = `INSERT INTO runs (id, workflow_id, workflow, version, environment, status, input,
		output, error, waiting_on, rerun_of, created_at, started_at, finished_at, definition, wake_at,
		cancel_requested, start_token, parent_run_id, depth, claims, started_by, task, acts_for, run_trigger, trace_parent,
		lease_owner, lease_until, concurrency_key, concurrency_limit)
	VALUES ($1, $2, $3, ` + checkedVersion + `, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
		$19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32)`

// runArgs are insertRunSQL's arguments for p's run, leased to p.Owner when set.
func runArgs(p runner.CreateRunParams, st storecodec.RunState) ([]any, error) {
	r, claims := p.Run, 0
	if p.Owner != "" {
		claims = 1
	}
	actsFor, err := storecodec.EncodeAuthority(r.ActsFor)
	if err != nil {
		return nil, err
	}
	var queue *string
	var limit int
	if c := r.Concurrency; c != nil {
		queue, limit = &c.Key, c.Limit
	}
	return []any{r.ID, r.WorkflowID, r.Workflow, p.CatalogVersion, p.CatalogVersion, r.Version, r.Environment, r.Status,
		[]byte(r.Input), []byte(r.Output), st.Error, st.WaitingOn, r.RerunOf, nanos(r.CreatedAt),
		nanosPtr(r.StartedAt), nanosPtr(r.FinishedAt), []byte(r.Definition), nanos(r.WakeAt),
		r.CancelRequested, r.StartToken, r.ParentRunID, r.Depth, claims, r.StartedBy, r.Task, actsFor, st.Trigger,
		r.TraceParent, p.Owner, nanos(p.LeaseUntil), queue, limit}, nil
}

// checkedVersion is the run's version in insertRun ($6), given the admission's catalog
// version ($4, $5): an admission resolved at a catalog version (not 0) that no longer
// stands writes NULL, which the column's NOT NULL refuses, and insertRun answers
// runner.ErrStaleCatalog; every other column insertRun binds NULL to is nullable.
const checkedVersion = `CASE WHEN $4::bigint = 0 OR $5::bigint = (SELECT value FROM counters WHERE name = 'catalog_version') THEN $6::integer END`

// GetRun returns a run with its steps; unknown → runner.ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	return getRun(ctx, s.pool, id)
}

func getRun(ctx context.Context, q querier, id string) (*runner.Run, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runSelect+` FROM runs WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("getting run %s: %w", id, mapErr(ctx, err, runner.ErrNotFound, nil))
	}
	return r, nil
}

// ListRuns lists runs newest first (created_at, then ID, descending), filtered by workflow,
// status, environment, task and readability. It walks the index that serves the most of
// the filter (runFilterOf); what that index leaves it checks on each run, examining at most
// limits.MaxRunsExamined (p.Examine) of them.
func (s *Store) ListRuns(ctx context.Context, p runner.ListRunsParams) ([]*runner.Run, string, error) {
	limit, examine := limits.Page(p.Limit), limits.Examined(p.Examine)
	f, err := runFilterOf(p)
	if err != nil {
		return nil, "", err
	}
	runs, stop, err := s.listRuns(ctx, f, limit, examine)
	if err != nil {
		return nil, "", fmt.Errorf("listing runs: %w", unreachable(ctx, err))
	}
	return storecodec.RunPage(runs, limit, stop)
}

// runOrder is the order of every list of runs, which each of its indexes holds.
const runOrder = ` ORDER BY created_at DESC, id DESC`

// listRuns reads up to limit+1 runs f selects. A filter its index serves whole reads them
// off that index. Else at most examine of the index's entries are walked and the runs they
// lead to checked; when fewer than limit+1 pass, stop is the last entry of a full walk
// that has an entry after it, where the next page begins.
func (s *Store) listRuns(ctx context.Context, f *runFilter, limit, examine int) ([]*runner.Run, *storecodec.RunCursor, error) {
	served := where(f.served)
	if len(f.rest) == 0 {
		runs, err := s.queryRuns(ctx, `SELECT `+runSelect+` FROM runs`+served+runOrder+` LIMIT `+strconv.Itoa(limit+1), f.servedArgs)
		return runs, nil, err
	}
	walk := `SELECT id FROM runs` + served + runOrder + ` LIMIT ` + strconv.Itoa(examine)
	runs, err := s.queryRuns(ctx, `SELECT `+runSelect+` FROM runs WHERE id IN (`+walk+`) AND `+
		strings.Join(f.rest, " AND ")+runOrder+` LIMIT `+strconv.Itoa(limit+1), append(slices.Clip(f.servedArgs), f.restArgs...))
	if err != nil || len(runs) > limit {
		return runs, nil, err
	}
	rows, err := s.pool.Query(ctx, numbered(`SELECT created_at, id FROM runs`+served+runOrder+
		` OFFSET `+strconv.Itoa(examine-1)+` LIMIT 2`), f.servedArgs...)
	if err != nil {
		return nil, nil, err
	}
	ends, err := collect(rows, func(row pgx.Row) (c storecodec.RunCursor, err error) {
		return c, row.Scan(&c.CreatedAt, &c.ID)
	})
	if err != nil || len(ends) < 2 {
		return runs, nil, err
	}
	return runs, &ends[0], nil
}

// queryRuns reads the runs a query selects, its placeholders ? numbered in order.
func (s *Store) queryRuns(ctx context.Context, query string, args []any) ([]*runner.Run, error) {
	rows, err := s.pool.Query(ctx, numbered(query), args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanRun)
}

// numbered replaces each ? of query by $1, $2, … in order: the filters of a list are
// written apart and joined in an order that depends on the list.
func numbered(query string) string {
	var b strings.Builder
	n := 0
	for {
		i := strings.IndexByte(query, '?')
		if i < 0 {
			b.WriteString(query)
			return b.String()
		}
		n++
		b.WriteString(query[:i])
		b.WriteString("$" + strconv.Itoa(n))
		query = query[i+1:]
	}
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
// Each ? of a condition is the next of its arguments.
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
// workflow's (runs_workflow_created), a status (runs_status_created), else none
// (runs_created, all runs). A bad cursor → runner.ErrInvalidCursor.
func runFilterOf(p runner.ListRunsParams) (*runFilter, error) {
	f := &runFilter{}
	own := p.Readable != nil && p.Readable.StartedBy != "" && len(p.Readable.WorkflowIDs) == 0
	tasks := own && p.Task && p.Environment != ""
	workflow := !own && p.WorkflowID != ""
	status := !own && !workflow && p.Status != ""
	if p.Readable != nil {
		readable(f, p.Readable, own)
	}
	if p.WorkflowID != "" {
		f.add(workflow, "workflow_id = ?", p.WorkflowID)
	}
	if p.Status != "" {
		f.add(status, "status = ?", string(p.Status))
	}
	if p.Environment != "" {
		f.add(tasks, "environment = ?", p.Environment)
	}
	if p.Task {
		f.add(tasks, "task")
	}
	if p.Trigger != "" {
		f.add(false, "convert_from(run_trigger, 'UTF8')::jsonb->>'type' = ?", p.Trigger)
	}
	if p.Cursor != "" {
		var c storecodec.RunCursor
		if err := storecodec.DecodeCursor(p.Cursor, &c, runner.ErrInvalidCursor); err != nil {
			return nil, err
		}
		f.add(true, "(created_at, id) < (?, ?)", c.CreatedAt, c.ID)
	}
	return f, nil
}

// readable adds the condition of a runner.Readable: started by the principal, or of one of
// the workflows (one argument, an array, however many a token's tags grant). own says the
// list's index serves it; one that admits no run is served too (the walk finds nothing).
func readable(f *runFilter, r *runner.Readable, own bool) {
	switch {
	case r.StartedBy != "" && len(r.WorkflowIDs) > 0:
		f.add(false, "(started_by = ? OR workflow_id = ANY(?))", r.StartedBy, r.WorkflowIDs)
	case r.StartedBy != "":
		f.add(own, "started_by = ?", r.StartedBy)
	case len(r.WorkflowIDs) > 0:
		f.add(false, "workflow_id = ANY(?)", r.WorkflowIDs)
	default:
		f.add(true, "false")
	}
}
