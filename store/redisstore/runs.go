package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecodec"
)

// runnerErrs maps script replies to the runner's sentinels.
var runnerErrs = map[string]error{
	replyNotFound: runner.ErrNotFound, replyLeaseLost: runner.ErrLeaseLost, replyFinished: runner.ErrFinished,
	replyConflict: errDuplicate, replyAllSteps: errAllSteps, replyStale: runner.ErrStaleCatalog,
}

// errAllSteps is SaveRun's signal that the run keeps its steps in one legacy field, so the
// save must write every step record.
var errAllSteps = errors.New("every step record must be written")

// runFields is the hash of a new run, leased to owner until leaseUntil when owner is set
// (counted as one claim). A field no script reads is left out when it holds its zero value
// (decodeRun reads a missing field as zero), and so are the lease and wake-up fields of a
// run admitted ended, which every script reads only after its status or its lease owner:
// an ended run's hash is about half as many fields.
//
// byVersion leaves the definition out too: it is the run's version's (definitions.go).
// actsFor is r.ActsFor encoded (storecodec.EncodeAuthority). They are appended to f, whose
// room runFieldsLen counts.
func runFields(f []any, r *runner.Run, st storecodec.RunState, owner string, leaseUntil time.Time, byVersion bool, member, actsFor string) []any {
	f = append(f, "id", r.ID, "workflow_id", r.WorkflowID, "workflow", r.Workflow, "version", r.Version,
		"environment", r.Environment, "status", string(r.Status), "input", []byte(r.Input),
		"output", []byte(r.Output), "created_at", ts(r.CreatedAt),
		"parent_run_id", r.ParentRunID, "sort_key", member)
	if !byVersion {
		f = append(f, "definition", []byte(r.Definition))
	}
	if !r.Status.Terminal() {
		f = append(f, "wake_at", ts(r.WakeAt), "poke_at", ts(time.Time{}), "cancel_requested", boolArg(r.CancelRequested),
			"lease_owner", owner, "lease_until", ts(leaseUntil))
	}
	opt := func(name string, v any, zero bool) {
		if !zero {
			f = append(f, name, v)
		}
	}
	opt("error", st.Error, len(st.Error) == 0)
	opt("waiting_on", st.WaitingOn, len(st.WaitingOn) == 0)
	opt("rerun_of", r.RerunOf, r.RerunOf == "")
	opt("started_at", tsPtr(r.StartedAt), r.StartedAt == nil)
	opt("finished_at", tsPtr(r.FinishedAt), r.FinishedAt == nil)
	opt("start_token", r.StartToken, r.StartToken == "")
	opt("depth", r.Depth, r.Depth == 0)
	opt("claims", 1, owner == "")
	opt("started_by", r.StartedBy, r.StartedBy == "")
	opt("task", "1", !r.Task)
	opt("acts_for", actsFor, actsFor == "")
	opt("run_trigger", st.Trigger, len(st.Trigger) == 0)
	opt("trace_parent", r.TraceParent, r.TraceParent == "")
	if c := r.Concurrency; c != nil {
		f = append(f, "concurrency_key", c.Key, "concurrency_limit", c.Limit)
	}
	for _, s := range st.Steps {
		f = append(f, stepFieldPrefix+strconv.Itoa(s.Index), s.Data)
	}
	return f
}

// runFieldsLen is the most values runFields appends for st.
func runFieldsLen(st storecodec.RunState) int { return 2 * (28 + len(st.Steps)) }

// dueScore is where a new run goes in the due index, as reindex_due would put it: its
// wake-up, or its lease's end if later while leased; "" when it is not due by time (ended,
// or waiting on nothing timed).
func dueScore(r *runner.Run, owner string, leaseUntil time.Time) string {
	if r.Status.Terminal() || r.WakeAt.IsZero() {
		return ""
	}
	at := r.WakeAt
	if owner != "" && leaseUntil.After(at) {
		at = leaseUntil
	}
	return score(at)
}

// stepFieldPrefix starts the hash field of each step record of a run: step:<index>.
const stepFieldPrefix = "step:"

// stepFields are the hash fields and values of encoded step records.
func stepFields(steps []storecodec.EncodedStep) []any {
	out := make([]any, 0, 2*len(steps))
	for _, st := range steps {
		out = append(out, stepFieldPrefix+strconv.Itoa(st.Index), st.Data)
	}
	return out
}

// decodeSteps reads a run's step records: a field each, or the one 'steps' field of a run
// stored before that.
func decodeSteps(m map[string]string) ([]*runner.StepRecord, error) {
	if legacy, ok := m["steps"]; ok {
		return storecodec.DecodeSteps([]byte(legacy))
	}
	rows := map[int][]byte{}
	for k, v := range m {
		idx, ok := strings.CutPrefix(k, stepFieldPrefix)
		if !ok {
			continue
		}
		i, err := strconv.Atoi(idx)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		rows[i] = []byte(v)
	}
	return storecodec.DecodeStepRows(rows)
}

// decodeRun reads a run hash; a missing run → nil.
func decodeRun(m map[string]string) (*runner.Run, error) {
	f := &fields{m: m}
	if f.str("id") == "" {
		return nil, nil
	}
	r := &runner.Run{
		ID: f.str("id"), WorkflowID: f.str("workflow_id"), Workflow: f.str("workflow"), Version: f.int("version"),
		Environment: f.str("environment"), Status: runner.Status(f.str("status")), Input: f.bytes("input"),
		Output: f.bytes("output"), RerunOf: f.str("rerun_of"), CreatedAt: f.time("created_at"),
		StartedAt: f.timePtr("started_at"), FinishedAt: f.timePtr("finished_at"), Definition: f.bytes("definition"),
		WakeAt: f.time("wake_at"), CancelRequested: f.bool("cancel_requested"), StartToken: f.str("start_token"),
		ParentRunID: f.str("parent_run_id"), Depth: f.int("depth"), Claims: f.int("claims"), StartedBy: f.str("started_by"),
		Task: f.bool("task"), AskMisses: runner.AskMisses{Step: f.int("ask_step"), N: f.int("ask_misses")},
	}
	if key, ok := m["concurrency_key"]; ok {
		r.Concurrency = &runner.Concurrency{Key: key, Limit: f.int("concurrency_limit")}
	}
	var err error
	if r.Error, err = storecodec.DecodeError(f.bytes("error")); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", r.ID, err)
	}
	if r.WaitingOn, err = storecodec.DecodeWaitingOn(f.bytes("waiting_on")); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", r.ID, err)
	}
	if r.Undelivered, err = storecodec.DecodeUndelivered(f.bytes("undelivered")); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", r.ID, err)
	}
	if r.ActsFor, err = storecodec.DecodeAuthority(f.str("acts_for")); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", r.ID, err)
	}
	if r.Trigger, err = storecodec.DecodeTrigger(f.bytes("run_trigger")); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", r.ID, err)
	}
	r.TraceParent = f.str("trace_parent")
	if r.Steps, err = decodeSteps(m); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", r.ID, err)
	}
	return r, f.err
}

// CreateRun admits p.Run, due at its WakeAt, in one script with its key (if any: a live
// key or a full scope → that outcome, nothing written), its start token (owned by another
// run → *runner.TokenConflictError, nothing written) and its lease (if any).
func (s *Store) CreateRun(ctx context.Context, p runner.CreateRunParams) (runner.CreateRunResult, error) {
	if err := p.Check(); err != nil {
		return runner.CreateRunResult{}, err
	}
	r := p.Run
	st, err := storecodec.EncodeNewRun(r)
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	keyArgs, err := s.admitKeyArgs(p.Key)
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	byVersion, err := s.byVersion(ctx, r)
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	actsFor, err := storecodec.EncodeAuthority(r.ActsFor)
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	// One slice holds the whole EVALSHA command (evalsha): go-redis copies none of it.
	k := s.k
	cmd := make([]any, 0, 3+12+11+len(keyArgs)+runFieldsLen(st))
	cmd = append(cmd, "evalsha", s.scripts.createRun.Hash(), 0,
		k.run(r.ID), k.runsCreated(), k.runsByWorkflow(r.WorkflowID), k.runsByStatus(string(r.Status)), k.runsDue(), k.catalogVersion())
	var claim idempotency.ClaimParams
	var rec *idempotency.Record
	if p.Key != nil {
		claim, rec = p.Key.Claim, p.Key.Answer
		for _, key := range s.keyKeys(claim.Scope, claim.Key) {
			cmd = append(cmd, key)
		}
	}
	var h runner.Hook
	hookRun, hookAt, hookMem := "", "", ""
	if p.Start != nil {
		h = *p.Start
		if h.RunID == "" {
			h.RunID = r.ID
		}
		cmd = append(cmd, k.hook(h.Environment, h.Token), k.runHooks(h.RunID))
		hookRun, hookAt, hookMem = h.RunID, ts(h.CreatedAt), hookMember(h.Environment, h.Token)
	}
	if c := r.Concurrency; c != nil {
		scope := concurrencyScope(*c, r.WorkflowID, r.Environment)
		cmd = append(cmd, k.concurrencyQueue(scope), k.concurrencyActive(scope), k.runsByStatus(string(runner.StatusQueued)))
	}
	cmd[2] = len(cmd) - 3
	catalogAt := ""
	if p.CatalogVersion != 0 {
		catalogAt = strconv.FormatInt(p.CatalogVersion, 10)
	}
	ended, parent, finished := "0", "", ""
	if r.Status.Terminal() {
		ended, parent, finished = "1", r.ParentRunID, tsPtr(r.FinishedAt)
	}
	member := sortKey(r.CreatedAt, r.ID)
	cmd = append(cmd, r.ID, member, hookRun, hookAt, hookMem, catalogAt, dueScore(r, p.Owner, p.LeaseUntil), ended, parent, finished)
	cmd = runFields(append(cmd, keyArgs...), r, st, p.Owner, p.LeaseUntil, byVersion, member, actsFor)
	res, err := s.evalsha(ctx, s.scripts.createRun, runnerErrs, cmd)
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, tokenConflict(err, &h))
	}
	out, err := s.claimResult(res, claim, rec)
	if err != nil {
		return runner.CreateRunResult{}, fmt.Errorf("creating run %s: %w", r.ID, err)
	}
	admitted := storecodec.Admitted(p, out)
	if reply, _ := res.([]any); out.Outcome == idempotency.Claimed && len(reply) == 3 {
		admitted.Queued = reply[1] == int64(1)
	}
	return admitted, nil
}

// GetRun returns a run with its steps; unknown → runner.ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (*runner.Run, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.run(id)).Result()
	var r *runner.Run
	if err == nil {
		r, err = s.decodeOneRun(ctx, m)
	}
	if err == nil && r == nil {
		err = runner.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("getting run %s: %w", id, err)
	}
	return r, nil
}

// runsByID reads runs in the order of ids, in one round trip, skipping any missing; a run
// whose version record is gone comes without its definition (readRuns).
func (s *Store) runsByID(ctx context.Context, ids []string) ([]*runner.Run, error) {
	hashes, err := s.hashes(ctx, s.k.run, anyStrings(ids))
	if err != nil {
		return nil, err
	}
	runs, err := s.readRuns(ctx, hashes)
	return stored(runs), err
}

// stored drops the runs missing (nil) from runs, in place.
func stored(runs []*runner.Run) []*runner.Run {
	out := runs[:0]
	for _, r := range runs {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// ListRuns lists runs newest first (created_at, then ID, descending), filtered by workflow,
// status, environment, task and readability. It walks the narrowest index (listIndex)
// backwards and filters the rest while it reads, examining at most
// limits.MaxRunsExamined (p.Examine) of the runs it names (collectRuns).
func (s *Store) ListRuns(ctx context.Context, p runner.ListRunsParams) ([]*runner.Run, string, error) {
	upper := "+"
	if p.Cursor != "" {
		var c storecodec.RunCursor
		if err := storecodec.DecodeCursor(p.Cursor, &c, runner.ErrInvalidCursor); err != nil {
			return nil, "", err
		}
		upper = "(" + sortKey(time.Unix(0, c.CreatedAt), c.ID)
	}
	index, served := s.listIndex(p)
	limit := limits.Page(p.Limit)
	readable := p.Readable.Admitter()
	runs, stop, err := s.collectRuns(ctx, index, upper, limit+1, limits.Examined(p.Examine), served, func(r *runner.Run) bool {
		return (p.Status == "" || r.Status == p.Status) && (p.Environment == "" || r.Environment == p.Environment) &&
			(!p.Task || r.Task) && (p.Trigger == "" || r.Trigger.Type == p.Trigger) && readable(r)
	})
	if err != nil {
		return nil, "", fmt.Errorf("listing runs: %w", err)
	}
	return storecodec.RunPage(runs, limit, stop)
}

// listIndex is the index a list of p walks, the narrowest (workflow, else status, else
// all), and whether it serves the whole filter: every run it names is kept (but one
// changed since), so the walk reads them whole at once, with no sift first.
func (s *Store) listIndex(p runner.ListRunsParams) (string, bool) {
	rest := p.Environment != "" || p.Task || p.Trigger != "" || p.Readable != nil
	switch {
	case p.WorkflowID != "":
		return s.k.runsByWorkflow(p.WorkflowID), !rest && p.Status == ""
	case p.Status != "":
		return s.k.runsByStatus(string(p.Status)), !rest
	}
	return s.k.runsCreated(), !rest
}

// collectRuns walks index from upper down, examining at most examine of its runs, and
// returns up to n runs that keep accepts; when the bound stops it first and a run follows,
// also the sort key of the last run it examined. It reads n entries first, what a filter
// the index serves whole needs, then twice as many each time up to maxWalkBatch, as entries
// it passes over cost little (sift), and never more than one past the bound: that one
// tells whether anything follows, without examining it. When the index serves the whole
// filter (served), it reads whole the runs it still needs, with no sift first: each page
// then costs one round trip less.
//
// An entry sortKey did not write (a hand edit) names no run: it is passed over unread and
// not counted, so that a page never stops at one, whose sort key no cursor can hold.
func (s *Store) collectRuns(ctx context.Context, index, upper string, n, examine int, served bool, keep func(*runner.Run) bool) ([]*runner.Run, *storecodec.RunCursor, error) {
	out := []*runner.Run{}
	batch := n
	var last storecodec.RunCursor // the last run examined: set once examine has moved
	for len(out) < n {
		count := batch
		if served {
			count = n - len(out)
		}
		count = min(count, examine+1)
		members, err := s.rdb.ZRevRangeByLex(ctx, index, &redis.ZRangeBy{Max: upper, Min: "-", Count: int64(count)}).Result()
		if err != nil {
			return nil, nil, err
		}
		at := runEntries(members)
		past := len(at) > examine // the walk stops before that entry, and a page follows
		at = at[:min(len(at), examine)]
		ids := make([]string, len(at))
		for i, c := range at {
			ids[i] = c.ID
		}
		var runs []*runner.Run
		through := len(ids)
		if served {
			runs, err = s.runsByID(ctx, ids)
		} else {
			runs, through, err = s.sift(ctx, ids, n-len(out), keep)
		}
		if err != nil {
			return nil, nil, err
		}
		examine -= through
		for _, r := range runs {
			if keep(r) {
				out = append(out, r)
			}
		}
		if through == len(ids) && len(members) < count {
			break
		}
		upper = "(" + members[len(members)-1]
		if through > 0 {
			last = at[through-1]
		}
		switch {
		case through < len(ids):
			upper = "(" + sortKey(time.Unix(0, last.CreatedAt), last.ID)
		case past && len(out) < n:
			return out, &last, nil
		}
		batch = min(2*batch, max(n, maxWalkBatch))
	}
	return out, nil, nil
}

// runEntries are the runs that index entries name, in their order, as list cursors; an
// entry sortKey did not write is left out.
func runEntries(members []string) []storecodec.RunCursor {
	out := make([]storecodec.RunCursor, 0, len(members))
	for _, m := range members {
		if c, ok := runCursorOf(m); ok {
			out = append(out, c)
		}
	}
	return out
}

// maxWalkBatch is the most index entries collectRuns reads at once (but a page's worth).
const maxWalkBatch = 1000

// listFields are the fields of a run hash that ListRuns's filter reads: decodeRun of them
// alone is the run as far as that filter looks. A filter on another field adds it here.
var listFields = []string{"id", "workflow_id", "status", "environment", "task", "started_by", "run_trigger"}

// sift reads the first want runs of ids that keep accepts, in order, and how many of ids
// it looked through to find them (all of them when fewer pass). It checks each on
// listFields first, in one round trip, and reads whole (runsByID) only those it keeps, so
// that a walk does not carry the steps, input and output of every run it passes over.
// keep is asked again of the whole run, which may have changed since.
func (s *Store) sift(ctx context.Context, ids []string, want int, keep func(*runner.Run) bool) ([]*runner.Run, int, error) {
	if len(ids) == 0 {
		return nil, 0, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.k.run(id)
	}
	hs, err := s.heads(ctx, keys, listFields)
	if err != nil {
		return nil, 0, err
	}
	var kept []string
	for i, m := range hs {
		r, err := decodeRun(m)
		if err != nil {
			return nil, 0, err
		}
		if r == nil || !keep(r) {
			continue
		}
		if kept = append(kept, ids[i]); len(kept) == want {
			runs, err := s.runsByID(ctx, kept)
			return runs, i + 1, err
		}
	}
	runs, err := s.runsByID(ctx, kept)
	return runs, len(ids), err
}

// tokenConflict turns a GR_TOKEN reply into a *runner.TokenConflictError for h.
func tokenConflict(err error, h *runner.Hook) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	word, owner, _ := cutWord(re.Error())
	if word != replyToken {
		return err
	}
	return &runner.TokenConflictError{Environment: h.Environment, Token: h.Token, OwnerRunID: owner}
}
