package runner

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/schemas"
)

// compensateID is the ID (and last path segment) of a compensation's record.
const compensateID = "compensate"

// onFailurePrefix starts the paths of the onFailure steps' records (no step ID has a
// capital letter, so none is taken for one).
const onFailurePrefix = "onFailure/"

// compensates reports whether a run of the definition has anything to do once it failed
// or was cancelled: compensations or onFailure steps.
func (x *execution) compensates() bool { return x.t != nil && !x.compensating() }

// compensating reports whether the run failed or was cancelled and now runs its
// compensations and onFailure steps: its error is set while it is not yet ended.
func (x *execution) compensating() bool { return x.r.Error != nil && !x.r.Status.Terminal() }

// compensate runs, once the run failed or was cancelled (its error set), the compensation of
// every completed step that has one, newest completed first, then the onFailure steps; each
// a durable step, its failure recorded on its record while the others still run. Then the
// run ends: cancelled when that was asked, else failed with its error. The phase ignores
// the run's cancel (a cancelled run compensates too), not the worker's interruptions.
func (x *execution) compensate(ctx context.Context) flow {
	ctx, stop := withoutCancelRequest(ctx)
	defer stop()
	x.running()
	x.scope.SetRunError(map[string]any{"code": x.r.Error.Code, "message": x.r.Error.Message, "step": x.r.Error.Step})
	recs, err := x.openCompensations()
	if err != nil {
		x.e.log.Error("finding the steps to compensate", "run", x.r.ID, "err", err)
	}
	for _, i := range recs {
		if settled(x.r.Steps[i]) {
			continue
		}
		if ctx.Err() != nil {
			return x.handBack(ctx)
		}
		if f := x.step(ctx, i); f != flowNext {
			return f
		}
	}
	if x.r.CancelRequested {
		x.r.Error = nil
		return x.finish(ctx, StatusCancelled, SaveOptions{})
	}
	return x.finish(ctx, StatusFailed, SaveOptions{})
}

// withoutCancelRequest is ctx, except that a cancel request of the run (errCancelRequested)
// does not end it.
func withoutCancelRequest(ctx context.Context) (context.Context, func()) {
	c, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); cause != errCancelRequested {
			cancel(cause)
		}
	})
	return c, func() {
		stop()
		cancel(nil)
	}
}

// openCompensations opens the records of the failure phase, in the order they run: the
// compensations of the completed steps, newest completed first (ties: the later record
// first), then the onFailure steps. The order is a function of the durable records, so a
// worker that resumes the phase finds the same one.
func (x *execution) openCompensations() ([]int, error) {
	var done []int
	for i, rec := range x.r.Steps {
		if rec.Status == StepCompleted && !strings.HasPrefix(rec.Path, onFailurePrefix) && !isCompensation(rec) {
			done = append(done, i)
		}
	}
	slices.SortStableFunc(done, func(a, b int) int {
		if c := x.r.Steps[b].FinishedAt.Compare(*x.r.Steps[a].FinishedAt); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	var recs []int
	for _, i := range done {
		path := PathOf(x.r.Steps[i])
		st, sc, err := x.reopen(path)
		if err != nil {
			return recs, err
		}
		if st.Compensate != nil {
			recs = append(recs, x.openRecord(path+"/"+compensateID, compensateID, st.Compensate, sc.Child()))
		}
	}
	if len(x.c.def.OnFailure) > 0 {
		recs = append(recs, x.openList(onFailurePrefix, x.c.def.OnFailure, x.scope.Child()).recs...)
	}
	return recs, nil
}

// isCompensation reports whether rec is a compensation's record.
func isCompensation(rec *StepRecord) bool {
	return rec.ID == compensateID && strings.HasSuffix(rec.Path, "/"+compensateID)
}

// reopen finds the step of the record at path (not a compensation's), opening the lists on
// the way as their steps' runs did (a foreach's items evaluated again), and returns it with
// the scope of its list.
func (x *execution) reopen(path string) (*schemas.Step, *expression.Scope, error) {
	segs := strings.Split(path, "/")
	i := slices.IndexFunc(x.c.def.Steps, func(st schemas.Step) bool { return st.ID == segs[0] })
	if i < 0 {
		return nil, nil, fmt.Errorf("no step %q", segs[0])
	}
	st, sc := &x.c.def.Steps[i], x.scope
	for k := 1; k+1 < len(segs); k += 2 {
		s := &stepExec{x: x, i: i, rec: x.r.Steps[i], st: st}
		l, err := x.openAt(s, segs[k])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		j := slices.IndexFunc(l.steps, func(st schemas.Step) bool { return st.ID == segs[k+1] })
		if j < 0 {
			return nil, nil, fmt.Errorf("%s: no step %q", path, segs[k+1])
		}
		i, st, sc = l.recs[j], &l.steps[j], l.scope
	}
	return st, sc, nil
}

// openAt opens the list of compound step s at key: a branch's id, an iteration's or a
// pass's number.
func (x *execution) openAt(s *stepExec, key string) (*stepList, error) {
	k, err := strconv.Atoi(key)
	switch st := s.st; {
	case st.Parallel != nil:
		for j := range st.Parallel.Branches {
			if b := &st.Parallel.Branches[j]; b.ID == key {
				return x.openBranch(s, b), nil
			}
		}
	case st.Foreach != nil:
		items, se := x.items(s)
		if se != nil {
			return nil, se
		}
		if err == nil && k >= 0 && k < len(items) {
			return x.openIteration(s, items, k), nil
		}
	case st.Loop != nil:
		if err == nil && k >= 0 {
			return x.openPass(s, k), nil
		}
	}
	return nil, fmt.Errorf("step %q has no list %q", PathOf(s.rec), key)
}
