package runner

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/schemas"
)

// SubmitParams asks for a new run.
type SubmitParams struct {
	// Workflow is the workflow's ID or name.
	Workflow string
	// Environment is EnvProduction (default) or EnvTest.
	Environment string
	// Input is the run input, a JSON object valid for the workflow's input schema.
	Input json.RawMessage
	// RerunOf is the run this one reruns, if any.
	RerunOf string
	// By is the principal starting the run, whom it acts for (SPEC §6); nil for a
	// webhook, whose run acts for the publisher of its version.
	By *auth.Principal
	// Task says the run is started as an MCP task (Run.Task).
	Task bool
	// Trigger says what starts the run (Run.Trigger); zero means api, and a rerun is
	// always rerun.
	Trigger Trigger
}

// SubmitResult is the run a submission answers with.
type SubmitResult struct {
	// Run is the run as the answer to the admission shows it (a new run: pending).
	Run *Run
	// Written is a new run as its admission wrote it (Admission.Written): it may be further
	// along than Run, and must not be modified (see Admission.Written). Nil when Reused or
	// Forwarded.
	Written *Run
	// Reused says Run is the owner of the start token, not a new run (reject, adopt,
	// continue).
	Reused bool
	// Forwarded says the input was queued as a payload for Run, the token's owner.
	Forwarded bool
}

// Answered is the run res answers with (Run); nil for a nil res, the result of a refused
// submission, so that a caller ends its admission's span (TraceAdmission) either way.
func (res *SubmitResult) Answered() *Run {
	if res == nil {
		return nil
	}
	return res.Run
}

// maxStartTries bounds supersede's cancel-then-claim loop, retries after an owner ends
// between a conflict and its reading, and Admit's preparations again of a changed workflow.
const maxStartTries = 3

// Submit validates the input and admits a new run: its row, its first wake-up, its start
// token claim and, when a worker slot is free, this engine's lease commit together, and the
// run starts here at once (else a worker claims it). An invalid input is an *InputError and
// nothing is written. A start-token conflict is answered per the definition's onConflict
// (SPEC §6); under fail it is a *TokenConflictError.
func (e *Engine) Submit(ctx context.Context, p SubmitParams) (*SubmitResult, error) {
	a, err := e.Prepare(ctx, p)
	if err != nil {
		return nil, err
	}
	return e.Admit(ctx, a)
}

func environment(env string) (string, error) {
	switch env {
	case "":
		return EnvProduction, nil
	case EnvProduction, EnvTest:
		return env, nil
	}
	return "", inputProblem("/environment", "environment must be %q or %q", EnvProduction, EnvTest)
}

// checkInput validates raw against the input schema and returns it compacted, and decoded.
func checkInput(c *compiled, raw json.RawMessage) (json.RawMessage, any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, nil, inputProblem("", "input is not valid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, nil, inputProblem("", "input must be a JSON object")
	}
	if problems := c.input.Validate(v); len(problems) > 0 {
		return nil, nil, &InputError{Problems: problems}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, nil, inputProblem("", "input is not valid JSON: %v", err)
	}
	return buf.Bytes(), v, nil
}

// newRun builds a pending run of t, due now, with every step pending.
func (e *Engine) newRun(t *Target, env string, input json.RawMessage) *Run {
	now := e.now()
	return &Run{
		ID:          uuid.Must(uuid.NewV7()).String(),
		WorkflowID:  t.WorkflowID,
		Workflow:    t.Name,
		Version:     t.Version,
		Environment: env,
		Status:      StatusPending,
		Input:       input,
		Output:      json.RawMessage("null"),
		CreatedAt:   now,
		Definition:  t.Definition,
		WakeAt:      now,
	}
}

// initSteps lays out the run's step records, each with its stepId.
func initSteps(r *Run, def *schemas.Definition) {
	r.Steps = make([]*StepRecord, len(def.Steps))
	recs := make([]StepRecord, len(def.Steps)) // one allocation for all
	for i, s := range def.Steps {
		recs[i] = StepRecord{ID: s.ID, StepID: stepID(r.ID, s.ID), Status: StepPending}
		r.Steps[i] = &recs[i]
	}
}

// stepNamespace roots the name-based UUIDs of step invocations.
var stepNamespace = uuid.MustParse("6f6a2b4e-3c1d-4e55-9a0b-8d8f3f1d2c7a")

// stepID is the stepId of step stepName in run runID: the same on every attempt and after a
// crash, different in any other run (reruns included). Steps never repeat within a run.
//
// It is uuid.NewSHA1(stepNamespace, runID+"\x00"+stepName), hashed from a buffer on the stack.
func stepID(runID, stepName string) string {
	var buf [192]byte
	b := append(buf[:0], stepNamespace[:]...)
	b = append(append(append(b, runID...), 0), stepName...)
	sum := sha1.Sum(b)
	var id uuid.UUID
	copy(id[:], sum[:])
	id[6] = (id[6] & 0x0f) | 0x50 // version 5
	id[8] = (id[8] & 0x3f) | 0x80 // RFC 4122 variant
	return id.String()
}

// admitChild creates r, a child of parent, claiming its start token if the definition has
// one, and applies the conflict policy, as parent may reach the owner, when another run
// owns the token.
func (e *Engine) admitChild(ctx context.Context, c *compiled, r, parent *Run) (*SubmitResult, error) {
	a, err := e.prepared(c, r)
	if err != nil {
		return nil, err
	}
	a.parent = parent
	return e.Admit(ctx, a)
}

// Admit commits a prepared run without an idempotency key and answers a start-token
// conflict per the definition's onConflict (SPEC §6): the owner's run (reused or
// forwarded), a retry after superseding, or under fail a *TokenConflictError.
//
// An admission whose workflow changed since Prepare (ErrTargetChanged) is prepared again
// from the same request and committed, up to maxStartTries times.
func (e *Engine) Admit(ctx context.Context, a *Admission) (*SubmitResult, error) {
	prepared := 0
	for try := 1; ; try++ {
		_, err := e.Commit(ctx, a, nil)
		if err == nil {
			return &SubmitResult{Run: a.Run, Written: a.Written}, nil
		}
		if errors.Is(err, ErrTargetChanged) && a.asked != nil && prepared < maxStartTries {
			if a, err = e.Prepare(ctx, *a.asked); err != nil {
				return nil, err
			}
			prepared++
			continue
		}
		var conflict *TokenConflictError
		if !errors.As(err, &conflict) {
			return nil, fmt.Errorf("creating run: %w", err)
		}
		if try > maxStartTries {
			return nil, e.shownConflict(ctx, a, conflict)
		}
		if res, err := e.startConflict(ctx, a, conflict); res != nil || err != nil {
			return res, err
		}
	}
}

// startConflict answers a start-token conflict per policy (default fail; continue acts as
// reject, since a run that was never admitted has no later steps); (nil, nil) means claim
// again. The policy acts on the owner only as a's viewer may (reaches): else the start is
// refused with a conflict that names no run (SPEC §6).
func (e *Engine) startConflict(ctx context.Context, a *Admission, c *TokenConflictError) (*SubmitResult, error) {
	policy := a.c.def.Start.OnConflict
	owner, err := e.store.GetRun(ctx, c.OwnerRunID)
	switch {
	case errors.Is(err, ErrNotFound): // gone since: claim again
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading owner run %s: %w", c.OwnerRunID, err)
	case !reaches(a.viewer(), conflictPermission(policy), owner):
		return nil, hiddenConflict(c)
	}
	switch policy {
	case schemas.OnConflictFail, "":
		return nil, c
	case schemas.OnConflictSupersede:
		if _, err := e.Cancel(ctx, c.OwnerRunID); err != nil && !errors.Is(err, ErrFinished) {
			return nil, fmt.Errorf("superseding run %s: %w", c.OwnerRunID, err)
		}
		return nil, nil
	case schemas.OnConflictForward:
		if _, err := e.store.EnqueuePayload(ctx, c.Environment, c.Token, a.Run.Input, e.now()); err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, nil
			}
			return nil, fmt.Errorf("forwarding to run %s: %w", c.OwnerRunID, err)
		}
		e.wake()
		return &SubmitResult{Run: owner, Forwarded: true}, nil
	}
	return &SubmitResult{Run: owner, Reused: true}, nil
}

// shownConflict is c as a's viewer may see it: naming the owner only when it may read it.
func (e *Engine) shownConflict(ctx context.Context, a *Admission, c *TokenConflictError) error {
	owner, err := e.store.GetRun(ctx, c.OwnerRunID)
	if err != nil || !reaches(a.viewer(), auth.RunsRead, owner) {
		return hiddenConflict(c)
	}
	return c
}

// startHook evaluates the definition's start token from the input; nil when it has none.
func (e *Engine) startHook(c *compiled, r *Run) (*Hook, error) {
	if c.def.Start == nil {
		return nil, nil
	}
	t, err := c.template(templateKey{-1, "start"}, func() (any, error) { return c.def.Start.Token, nil })
	if err != nil {
		return nil, fmt.Errorf("start token: %w", err)
	}
	input, err := decodeJSON(r.Input)
	if err != nil {
		return nil, err
	}
	v, err := t.Eval(expression.Env{"input": input, "run": runEnv(r)})
	if err != nil {
		return nil, inputProblem("", "start token: %v", err)
	}
	token, ok := v.(string)
	if !ok || token == "" {
		return nil, inputProblem("", "start token must evaluate to a non-empty string, got %v", v)
	}
	r.StartToken = token
	return &Hook{Environment: r.Environment, Token: token, RunID: r.ID, CreatedAt: r.CreatedAt}, nil
}

func runEnv(r *Run) map[string]any {
	return map[string]any{"id": r.ID, "workflow": r.Workflow, "version": r.Version, "environment": r.Environment}
}

// Rerun starts a new run with the same input and environment as run id, on the workflow's
// current version, with RerunOf set, started by the principal by.
func (e *Engine) Rerun(ctx context.Context, id string, by *auth.Principal) (r *Run, err error) {
	ctx, end := e.TraceAdmission(ctx, TriggerRerun)
	defer func() { end(r, err) }()
	a, err := e.prepareRerun(ctx, id, by)
	if err != nil {
		return nil, err
	}
	res, err := e.Admit(ctx, a)
	if err != nil {
		return nil, err
	}
	return res.Run, nil
}

// prepareRerun prepares the admission of a rerun of run id (Prepare: it writes nothing).
func (e *Engine) prepareRerun(ctx context.Context, id string, by *auth.Principal) (*Admission, error) {
	old, err := e.store.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	return e.Prepare(ctx, SubmitParams{Workflow: old.WorkflowID, Environment: old.Environment, Input: old.Input, RerunOf: id, By: by})
}

// MaxBulkRerun is how many runs one RerunMany may start.
const MaxBulkRerun = 1000

// RerunManyParams selects the runs to rerun: RunIDs, or every run of Workflow (its ID) with
// Status.
type RerunManyParams struct {
	RunIDs   []string
	Workflow string
	Status   Status
	// By is the principal starting the new runs.
	By *auth.Principal
}

// RerunMany reruns up to MaxBulkRerun runs and returns the new runs in order. Every rerun
// is prepared before any is written: a run that cannot be rerun (gone, its workflow
// deleted or unpublished, its input not valid for the current version) refuses the whole
// request and starts nothing, so that a retry starts no run twice. Only what changes
// between two writes leaves some started: the store failing, or the workflow published,
// unpublished, deleted or given a new input schema meanwhile. The admissions are
// prepared again to be written, one at a time, so that memory holds one input at a time,
// not up to MaxBulkRerun of them.
func (e *Engine) RerunMany(ctx context.Context, p RerunManyParams) ([]*Run, error) {
	ids, err := e.selectReruns(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, err := e.prepareRerun(ctx, id, p.By); err != nil {
			return nil, fmt.Errorf("rerunning run %s: %w", id, err)
		}
	}
	out := make([]*Run, 0, len(ids))
	for _, id := range ids {
		r, err := e.Rerun(ctx, id, p.By)
		if err != nil {
			return out, fmt.Errorf("rerunning run %s: %w", id, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (e *Engine) selectReruns(ctx context.Context, p RerunManyParams) ([]string, error) {
	switch {
	case len(p.RunIDs) > MaxBulkRerun:
		return nil, inputProblem("/runIds", "at most %d runs at once", MaxBulkRerun)
	case len(p.RunIDs) > 0:
		return p.RunIDs, nil
	case p.Workflow == "":
		return nil, inputProblem("", "give runIds, or a workflow and a status")
	}
	runs, next, err := Collect(MaxBulkRerun+1, "", func(limit int, cursor string) ([]*Run, string, error) {
		return e.store.ListRuns(ctx, ListRunsParams{WorkflowID: p.Workflow, Status: p.Status, Limit: limit, Cursor: cursor})
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("listing runs: %w", err)
	case len(runs) > MaxBulkRerun:
		return nil, inputProblem("", "more than %d runs match; narrow the selection", MaxBulkRerun)
	case next != "":
		return nil, inputProblem("", "the workflow has too many runs to look through (more than %d); give runIds", MaxListExamined)
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids, nil
}
