package runner

import (
	"context"
	"strconv"
	"time"

	"github.com/gorunner/gorunner/schemas"
)

// A foreach with a workflow (docs/control-flow.md) runs one child run per item: iteration k
// is one record at path "<foreach>/<k>" running the workflow step {id: the foreach's,
// workflow: its workflow}, which flowIndex numbers among the steps that see the item and
// index. Children are ordinary runs: any process sharing the store works them, and each
// one's end wakes the parent through the store.

// childList is the one-step list each iteration of foreach step st runs (nil: st starts no
// child runs).
func (f *flowIndex) childList(st *schemas.Step) []schemas.Step { return f.children[st] }

// addChildList numbers the one-step list of st when it is a foreach with a workflow.
func (f *flowIndex) addChildList(st *schemas.Step, vars []string) {
	if st.Foreach == nil || st.Foreach.Workflow == nil {
		return
	}
	l := []schemas.Step{{ID: st.ID, Workflow: st.Foreach.Workflow}}
	f.children[st], f.iterations[&l[0]] = l, true
	f.node[&l[0]] = len(f.steps)
	f.steps, f.vars = append(f.steps, &l[0]), append(f.vars, vars)
}

// childRunID is the ID of the child run a foreach iteration's attempt starts: derived from
// the run and the record's path, so that a crash between starting the child and saving the
// record finds the same child again instead of starting a second one.
func childRunID(runID, path string, attempt int) string {
	return stepID(runID, "child:"+path+"#"+strconv.Itoa(attempt))
}

// derivedChild is the child run ID step s starts when it is a foreach iteration ("" for a
// workflow step of its own, whose child ID is drawn and saved first).
func (s *stepExec) derivedChild() string {
	f := s.x.c.flowIndex()
	if f == nil || !f.iterations[s.st] {
		return ""
	}
	return childRunID(s.run().ID, PathOf(s.rec), s.rec.Attempts)
}

// openChildIteration opens iteration k of foreach step s over items, which starts a child run.
func (x *execution) openChildIteration(s *stepExec, items []any, k int) *stepList {
	steps := x.c.flowIndex().childList(s.st)
	sc := x.iterationScope(s, items, k)
	path := PathOf(s.rec) + "/" + strconv.Itoa(k)
	return &stepList{steps: steps, recs: []int{x.openRecord(path, steps[0].ID, &steps[0], sc)}, scope: sc}
}

// foreachChildren runs the iterations of foreach step s as child runs, in item order, at
// most concurrency of them started and not ended at once (a waiting child holds its slot,
// unlike an inline iteration's wait). The first failed iteration starts no more. Iterations
// not started yet have no record, so those started are always a prefix of the items.
func (x *execution) foreachChildren(ctx context.Context, s *stepExec, items []any) (any, *stepError, flow) {
	limit := max(s.st.Foreach.Concurrency, 1)
	outer := x.branches > 0
	if !outer {
		x.mu.Lock()
		x.soonest, x.waits = time.Time{}, nil
		defer x.mu.Unlock()
	}
	x.branches++
	lists, flows := make([]*stepList, 0, len(items)), make([]flow, 0, len(items))
	out, bad, active := make([]any, len(items)), -1, 0
	for k := range items {
		_, started := x.t.byPath[PathOf(s.rec)+"/"+strconv.Itoa(k)]
		if !started && (active >= limit || bad >= 0) {
			break
		}
		l := x.openChildIteration(s, items, k)
		b, f := x.runList(ctx, l)
		lists, flows = append(lists, l), append(flows, f)
		if f == flowKeep {
			break
		}
		if f != flowNext {
			active++
			continue
		}
		out[k] = x.lastOutput(l)
		if b >= 0 && bad < 0 {
			bad = b
		}
	}
	x.branches--
	if bad >= 0 && active > 0 {
		x.cancelChildren(ctx, lists)
	}
	f := x.joined(ctx, lists, flows, bad >= 0 && active > 0)
	return out, x.failedAt(bad), f
}

// cancelChildren cancels the iterations of lists still waiting for their child run once
// another failed the foreach, and asks their children to cancel, so that none outlives
// the step. A cancel that cannot be recorded is logged: the child then runs to its end.
func (x *execution) cancelChildren(ctx context.Context, lists []*stepList) {
	now := x.e.now()
	for _, l := range lists {
		rec := x.r.Steps[l.recs[0]]
		if rec.Status != StepWaiting {
			continue
		}
		if err := x.e.cancelChild(ctx, rec); err != nil {
			x.e.log.Error("cancelling the child run of a foreach's iteration", "run", x.r.ID, "step", rec.Path, "err", err)
		}
		x.touch(l.recs[0])
		rec.Status, rec.FinishedAt = StepCancelled, &now
	}
}
