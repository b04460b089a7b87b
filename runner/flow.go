package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/schemas"
)

// tree is an execution's index of its run's nested records (docs/design/control-flow.md): by
// path, and for those whose list the pass has opened, their step and the scope their
// expressions see. Top-level records are not in it.
type tree struct {
	byPath map[string]int
	step   map[int]*schemas.Step
	scope  map[int]*expression.Scope
}

// newTree indexes the nested records of recs, those after the n top-level ones.
func newTree(recs []*StepRecord, n int) *tree {
	t := &tree{byPath: make(map[string]int, len(recs)-n), step: map[int]*schemas.Step{}, scope: map[int]*expression.Scope{}}
	for i := n; i < len(recs); i++ {
		t.byPath[recs[i].Path] = i
	}
	return t
}

// PathOf is a record's path (docs/design/control-flow.md): its Path, or for a top-level record
// its ID.
func PathOf(rec *StepRecord) string {
	if rec.Path != "" {
		return rec.Path
	}
	return rec.ID
}

// stepAt is the definition's step of record i.
func (x *execution) stepAt(i int) *schemas.Step {
	if i < len(x.c.def.Steps) {
		return &x.c.def.Steps[i]
	}
	return x.t.step[i]
}

// scopeAt is the scope record i's expressions see.
func (x *execution) scopeAt(i int) *expression.Scope {
	if x.t == nil || i < len(x.c.def.Steps) {
		return x.scope
	}
	return x.t.scope[i]
}

// nodeAt is the number of record i's step among the definition's templates (flowIndex).
func (x *execution) nodeAt(i int) int {
	if i < len(x.c.def.Steps) {
		return i
	}
	return x.c.flowIndex().node[x.t.step[i]]
}

// gaveUp ends step i, failed for good with err: the run fails, unless the step goes on
// failed (onError: continue) or is nested, when the list that holds it decides (runList).
func (x *execution) gaveUp(ctx context.Context, i int, err error) flow {
	se := asStepError(err)
	if i < len(x.c.def.Steps) && x.c.def.Steps[i].OnError != schemas.OnErrorContinue {
		return x.finishFailed(ctx, i, se)
	}
	x.markFailed(i, &Error{Code: se.code, Message: se.msg, Step: PathOf(x.r.Steps[i])}, nil)
	x.running()
	return x.saveProgress(ctx, SaveOptions{}, true)
}

// asStepError is err as the step error it is, or a permanent CodeStep one.
func asStepError(err error) *stepError {
	var se *stepError
	if errors.As(err, &se) {
		return se
	}
	return permanent(CodeStep, "%v", err)
}

// markFailed records step i failed with e, its output raw (what a compound step completed).
func (x *execution) markFailed(i int, e *Error, raw []byte) {
	rec, now := x.r.Steps[i], x.e.now()
	x.touch(i)
	rec.Status, rec.Error, rec.Output, rec.State, rec.FinishedAt = StepFailed, e, raw, nil, &now
	x.remember(i, rec, nil, false)
}

// stepList is one opened list of steps: a branch, an iteration, a pass.
type stepList struct {
	steps []schemas.Step
	recs  []int // the record of each step
	scope *expression.Scope
}

// openList opens the list steps whose records' paths start with prefix, in scope sc:
// its records are found, or added (pending) when the list is entered the first time.
func (x *execution) openList(prefix string, steps []schemas.Step, sc *expression.Scope) *stepList {
	l := &stepList{steps: steps, recs: make([]int, len(steps)), scope: sc}
	for j := range steps {
		l.recs[j] = x.openRecord(prefix+steps[j].ID, steps[j].ID, &steps[j], sc)
	}
	return l
}

// openRecord finds the nested record at path, of step st (its ID id), or adds it pending,
// and makes sc the scope its expressions see (and where its output goes).
func (x *execution) openRecord(path, id string, st *schemas.Step, sc *expression.Scope) int {
	i, ok := x.t.byPath[path]
	if !ok {
		i = len(x.r.Steps)
		x.r.Steps = append(x.r.Steps, &StepRecord{ID: id, Path: path, StepID: stepID(x.r.ID, path), Status: StepPending})
		x.t.byPath[path] = i
		x.touch(i)
	}
	x.t.step[i], x.t.scope[i] = st, sc
	if rec := x.r.Steps[i]; settled(rec) {
		x.remember(i, rec, nil, false)
	}
	return i
}

// runList runs the steps of l in order, each to its end. It returns the record of the
// step that failed the list (-1: none), and how the pass goes on.
func (x *execution) runList(ctx context.Context, l *stepList) (int, flow) {
	for j, i := range l.recs {
		rec := x.r.Steps[i]
		if !settled(rec) {
			if f := x.interruption(ctx); f != flowNext {
				return -1, f
			}
			if f := x.step(ctx, i); f != flowNext {
				return -1, f
			}
		}
		if rec.Status == StepFailed && l.steps[j].OnError != schemas.OnErrorContinue {
			return i, flowNext
		}
	}
	return -1, flowNext
}

// interruption ends the pass between two steps when the run's cancel was asked or the
// worker's context ended, as the run loop does; flowNext: neither. A list running
// concurrently with others just stops (concurrently decides for the run).
func (x *execution) interruption(ctx context.Context) flow {
	stop := x.r.CancelRequested || ctx.Err() != nil
	if stop && x.branches > 0 {
		return flowRelease
	}
	if x.r.CancelRequested || context.Cause(ctx) == errCancelRequested {
		return x.finishCancelled(ctx)
	}
	if ctx.Err() != nil {
		return x.handBack(ctx)
	}
	return flowNext
}

// lastOutput is the output of the last step of l (null when it was skipped).
func (x *execution) lastOutput(l *stepList) any {
	v, _ := decodeJSON(x.r.Steps[l.recs[len(l.recs)-1]].Output)
	return v
}

// compound runs compound step i (parallel, foreach, loop) until it ends or the pass stops.
func (x *execution) compound(ctx context.Context, i int) flow {
	rec := x.r.Steps[i]
	s := &stepExec{x: x, i: i, rec: rec, st: x.stepAt(i)}
	x.touch(i)
	if rec.Status == StepPending {
		now := x.e.now()
		rec.StartedAt = &now
		if skip, err := s.skip(); err != nil || skip {
			return x.skipped(ctx, i, err)
		}
		rec.Status, rec.Attempts = StepRunning, 1
	}
	var out any
	var failed *stepError
	f := flowNext
	switch st := s.st; {
	case st.Parallel != nil:
		out, failed, f = x.parallel(ctx, s)
	case st.Foreach != nil:
		out, failed, f = x.foreach(ctx, s)
	default:
		out, failed, f = x.loop(ctx, s)
	}
	if f != flowNext {
		return f
	}
	raw, err := encodeOutput(out)
	if err != nil {
		return x.gaveUp(ctx, i, permanent(CodeStep, "encoding output: %v", err))
	}
	if failed != nil {
		return x.compoundFailed(ctx, i, failed, raw)
	}
	now := x.e.now()
	rec.Status, rec.Output, rec.Error, rec.FinishedAt = StepCompleted, raw, nil, &now
	x.remember(i, rec, nil, false)
	x.running()
	return x.saveProgress(ctx, SaveOptions{}, false)
}

// compoundFailed ends compound step i failed with se, its output raw holding what completed:
// as gaveUp, naming the nested step that failed.
func (x *execution) compoundFailed(ctx context.Context, i int, se *stepError, raw []byte) flow {
	at := se.at
	if at == "" {
		at = PathOf(x.r.Steps[i])
	}
	if i < len(x.c.def.Steps) && x.c.def.Steps[i].OnError != schemas.OnErrorContinue {
		x.touch(i)
		x.r.Steps[i].Output = raw
		return x.finishFailed(ctx, i, &stepError{code: se.code, msg: se.msg, at: at})
	}
	x.markFailed(i, &Error{Code: se.code, Message: se.msg, Step: at}, raw)
	x.running()
	return x.saveProgress(ctx, SaveOptions{}, false)
}

// failedAt is failedBy(i), or nil when i is -1 (no record failed).
func (x *execution) failedAt(i int) *stepError {
	if i < 0 {
		return nil
	}
	return x.failedBy(i)
}

// failedBy is the error a nested step's failure (record i) gives the compound step holding it.
func (x *execution) failedBy(i int) *stepError {
	e := x.r.Steps[i].Error
	if e == nil {
		return &stepError{code: CodeStep, msg: "step failed", at: PathOf(x.r.Steps[i])}
	}
	return &stepError{code: e.Code, msg: e.Message, at: e.Step}
}

// openBranch opens branch b of parallel step s, in a scope of its own.
func (x *execution) openBranch(s *stepExec, b *schemas.Branch) *stepList {
	return x.openList(PathOf(s.rec)+"/"+b.ID+"/", b.Steps, x.scopeAt(s.i).Child())
}

// openIteration opens iteration k of foreach step s over items: its scope sees the item
// and index.
func (x *execution) openIteration(s *stepExec, items []any, k int) *stepList {
	return x.openList(PathOf(s.rec)+"/"+strconv.Itoa(k)+"/", s.st.Foreach.Steps, x.iterationScope(s, items, k))
}

// iterationScope is the scope of iteration k of foreach step s over items: it sees the
// item and index.
func (x *execution) iterationScope(s *stepExec, items []any, k int) *expression.Scope {
	sc := x.scopeAt(s.i).Child()
	sc.SetVar(s.st.Foreach.ItemName(), items[k])
	sc.SetVar(schemas.IndexVar, k)
	return sc
}

// openPass opens pass k of loop step s: its scope sees the iteration.
func (x *execution) openPass(s *stepExec, k int) *stepList {
	sc := x.scopeAt(s.i).Child()
	sc.SetVar(schemas.IterationVar, k)
	return x.openList(PathOf(s.rec)+"/"+strconv.Itoa(k)+"/", s.st.Loop.Steps, sc)
}

// parallel runs the branches of s, one after the other; the output is keyed by branch id.
// A failed branch fails the step; under failFast the branches after it do not start.
func (x *execution) parallel(ctx context.Context, s *stepExec) (any, *stepError, flow) {
	p := s.st.Parallel
	out := make(map[string]any, len(p.Branches))
	var failed *stepError
	for _, b := range p.Branches {
		out[b.ID] = nil
	}
	if n := len(p.Branches); concurrent(n) {
		lists, bad, f := x.concurrently(ctx, n, n, p.FailsFast(), func(k int) *stepList { return x.openBranch(s, &p.Branches[k]) })
		for k, l := range lists {
			if l != nil {
				out[p.Branches[k].ID] = x.lastOutput(l)
			}
		}
		return out, x.failedAt(bad), f
	}
	for j := range p.Branches {
		b := &p.Branches[j]
		l := x.openBranch(s, b)
		bad, f := x.runList(ctx, l)
		if f != flowNext {
			return nil, nil, f
		}
		out[b.ID] = x.lastOutput(l)
		if bad >= 0 && failed == nil {
			failed = x.failedBy(bad)
			if p.FailsFast() {
				break
			}
		}
	}
	return out, failed, flowNext
}

// foreach runs the steps of s once per item, in item order; the output is each
// iteration's last output. A failed iteration fails the step.
func (x *execution) foreach(ctx context.Context, s *stepExec) (any, *stepError, flow) {
	items, se := x.items(s)
	if se != nil {
		return nil, se, flowNext
	}
	if s.rec.State == nil {
		x.touch(s.i)
		s.rec.State, _ = json.Marshal(foreachState{Items: len(items)})
	}
	if s.st.Foreach.Workflow != nil {
		return x.foreachChildren(ctx, s, items)
	}
	out := make([]any, len(items))
	if fe := s.st.Foreach; concurrent(fe.Concurrency) {
		lists, bad, f := x.concurrently(ctx, len(items), fe.Concurrency, true, func(k int) *stepList { return x.openIteration(s, items, k) })
		for k, l := range lists {
			if l != nil {
				out[k] = x.lastOutput(l)
			}
		}
		return out, x.failedAt(bad), f
	}
	for k := range items {
		l := x.openIteration(s, items, k)
		bad, f := x.runList(ctx, l)
		if f != flowNext {
			return nil, nil, f
		}
		out[k] = x.lastOutput(l)
		if bad >= 0 {
			return out, x.failedBy(bad), flowNext
		}
	}
	return out, nil, flowNext
}

// foreachState is a foreach record's state: how many items it goes over (for Progress).
type foreachState struct {
	Items int `json:"items"`
}

// Progress reports, for the record of a foreach step at index i of r that has begun, how
// many of its iterations have finished and how many it has (ok false: i is no such record).
func Progress(r *Run, i int) (done, total int, ok bool) {
	rec := r.Steps[i]
	var st foreachState
	if len(rec.State) == 0 || json.Unmarshal(rec.State, &st) != nil || st.Items == 0 {
		return 0, 0, false
	}
	prefix := PathOf(rec) + "/"
	open := map[string]bool{} // iteration → every record of it settled so far
	for _, n := range r.Steps {
		rest, found := strings.CutPrefix(n.Path, prefix)
		if !found {
			continue
		}
		k, _, _ := strings.Cut(rest, "/")
		if v, seen := open[k]; !seen || v {
			open[k] = settled(n)
		}
	}
	for _, finished := range open {
		if finished {
			done++
		}
	}
	return done, st.Items, true
}

// items evaluates the items of foreach step s: an array, within its bound.
func (x *execution) items(s *stepExec) ([]any, *stepError) {
	fe := s.st.Foreach
	v, err := s.evalKey(partItems, func() (any, error) { return toJSONValue(fe.Items) }, s.rec.Attempts)
	if err != nil {
		return nil, asStepError(err)
	}
	items, ok := v.([]any)
	switch {
	case !ok:
		return nil, permanent(CodeInvalidItems, "step %q: items is %s, not an array", PathOf(s.rec), jsonType(v))
	case fe.Workflow != nil && len(items) > schemas.MaxChildIterations:
		return nil, permanent(CodeTooManyItems, "step %q: %d items; a foreach with a workflow takes at most %d", PathOf(s.rec), len(items), schemas.MaxChildIterations)
	case fe.Workflow == nil && len(items) > schemas.MaxIterations:
		return nil, permanent(CodeTooManyItems, "step %q: %d items; a foreach with steps takes at most %d", PathOf(s.rec), len(items), schemas.MaxIterations)
	}
	return items, nil
}

// jsonType names the JSON type of v for a message.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// loop runs the passes of loop step s until its until is true after one; the output is
// the last pass's last output. A failed pass fails the step, and so does reaching
// maxIterations (LOOP_LIMIT).
func (x *execution) loop(ctx context.Context, s *stepExec) (any, *stepError, flow) {
	lp := s.st.Loop
	var last any
	for pass := 0; pass < lp.MaxIterations; pass++ {
		l := x.openPass(s, pass)
		bad, f := x.runList(ctx, l)
		if f != flowNext {
			return nil, nil, f
		}
		last = x.lastOutput(l)
		if bad >= 0 {
			return last, x.failedBy(bad), flowNext
		}
		l.scope.SetStep(s.rec.ID, s.rec.StepID, s.rec.Attempts)
		done, err := s.evalIn(l.scope, partUntil, func() (any, error) { return lp.Until, nil })
		if err != nil {
			return last, asStepError(err), flowNext
		}
		if expression.Truthy(done) {
			return last, nil, flowNext
		}
	}
	return last, permanent(CodeLoopLimit, "step %q: until was still false after maxIterations (%d) passes", PathOf(s.rec), lp.MaxIterations), flowNext
}
