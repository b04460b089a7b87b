package runner

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errFailFast ends the lists still running once one failed under failFast.
var errFailFast = errors.New("another branch failed")

// dueAt makes the run due again at t; while lists run concurrently the earliest such time
// is kept too, so that what another list sets meanwhile does not lose it.
func (x *execution) dueAt(t time.Time) {
	x.r.WakeAt = t
	if x.branches > 0 && (x.soonest.IsZero() || t.Before(x.soonest)) {
		x.soonest = t
	}
}

// offline runs wait, which waits on the network for the step: in a list running
// concurrently with others the run's own lock is let go meanwhile, so that they go on;
// else the run's worker slot is (Engine.withoutSlot).
func (s *stepExec) offline(ctx context.Context, wait func()) {
	if s.x.branches == 0 {
		s.engine().withoutSlot(ctx, s.run().ID, wait)
		return
	}
	s.x.mu.Unlock()
	defer s.x.mu.Lock()
	wait()
}

// concurrent reports whether the lists of a compound step run at once: limit of them at
// a time is more than one.
func concurrent(limit int) bool { return limit > 1 }

// concurrently runs lists 0..n-1 (open(k) opens list k), limit at a time, each on a
// goroutine of its own holding x.mu but while it waits on the network (offline); under
// failFast the first failed list ends the others (their unfinished records cancelled) and
// no more start. It returns the lists opened (nil for those not started), the first failed
// record by list order, and how the pass goes on: a list that stopped (a wait, a retry's
// backoff, the http bounds, the worker's interruption) waits alone while the others go
// on; once none can, the run is handed back (see joined).
func (x *execution) concurrently(ctx context.Context, n, limit int, failFast bool,
	open func(k int) *stepList) ([]*stepList, int, flow) {
	outer := x.branches > 0
	if !outer {
		x.mu.Lock()
		x.soonest, x.waits = time.Time{}, nil
		x.beginTogether()
	}
	x.branches++
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lists, bad := make([]*stepList, n), make([]int, n)
	flows := make([]flow, n)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	failed := false
	for k := 0; k < n && lctx.Err() == nil; k++ {
		x.mu.Unlock()
		sem <- struct{}{}
		x.mu.Lock()
		lists[k] = open(k) // here, not on the goroutine: records are added in list order
		if x.group.on {
			x.group.tails[lists[k].recs[len(lists[k].recs)-1]] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.mu.Lock()
			defer x.mu.Unlock()
			bad[k], flows[k] = x.runList(lctx, lists[k])
			<-sem // the next list may start while this one's last record is committed
			if f := x.settle(ctx, lists[k]); flows[k] == flowNext {
				flows[k] = f
			}
			if bad[k] >= 0 {
				failed = true
			}
			if (failFast && failed) || x.ending != nil {
				cancel(errFailFast)
			}
		}()
	}
	x.mu.Unlock()
	wg.Wait()
	x.mu.Lock()
	x.branches--
	if !outer {
		x.group.on = false
	}
	f := x.joined(ctx, lists, flows, (failFast && failed) || x.ending != nil)
	if !outer {
		x.mu.Unlock()
	}
	first := -1
	for k := range lists {
		if lists[k] != nil && bad[k] >= 0 {
			first = bad[k]
			break
		}
	}
	return lists, first, f
}

// joined is how the pass goes on once the lists running concurrently have returned with
// flows (x.mu held): a lost lease ends it; lists ended by failFast or by a step that
// completed the run (cancelled) have their unfinished records cancelled, and the run
// then ends if one did; a list that stopped hands the run back (see concurrently).
func (x *execution) joined(ctx context.Context, lists []*stepList, flows []flow, cancelled bool) flow {
	stopped := false
	for _, f := range flows {
		switch f {
		case flowKeep:
			return flowKeep
		case flowRelease:
			stopped = true
		}
	}
	if cancelled {
		now := x.e.now()
		for _, l := range lists {
			if l == nil {
				continue
			}
			for _, i := range l.recs {
				if rec := x.r.Steps[i]; rec.Status == StepRunning {
					x.touch(i)
					rec.Status, rec.FinishedAt = StepCancelled, &now
				}
			}
		}
		stopped = false
	}
	switch {
	case x.ending != nil && x.branches > 0:
		return flowRelease
	case x.ending != nil:
		return x.finish(ctx, StatusCompleted, *x.ending)
	case !stopped:
		return flowNext
	case x.branches > 0:
		return flowRelease
	}
	if f := x.interruption(ctx); f != flowNext {
		return f
	}
	x.suspendLists()
	f := x.saveAndRelease(ctx)
	x.e.wakeAt(x.r.WakeAt)
	return f
}

// suspendLists makes the run wait for the lists that stopped: waiting when one waits on a
// hook or a sleep, due at the earliest time one of them asked for (none: only an event,
// a payload or a child's end, wakes it), or at once when none waits and none asked. Its
// WaitingOn is the wait shown first (shownBefore), whatever order the lists stopped in.
func (x *execution) suspendLists() {
	x.running()
	wake := x.soonest
	var shown *suspension
	for _, w := range x.waits {
		if w.runStatus == StatusWaiting && (shown == nil || w.shownBefore(shown)) {
			shown = w
		}
		if !w.until.IsZero() && (wake.IsZero() || w.until.Before(wake)) {
			wake = w.until
		}
	}
	if shown != nil {
		x.r.Status, x.r.WaitingOn = StatusWaiting, shown.waitingOn
	}
	if !wake.IsZero() || len(x.waits) > 0 {
		x.r.WakeAt = wake
	}
}

// shownBefore reports whether wait w is the run's WaitingOn rather than v, when several
// lists wait at once: a hook that asks before one that does not, a hook before a sleep,
// then the earlier record, so that the question shown is the one MCP clients are asked
// first (docs/mcp.md, nested hooks).
func (w *suspension) shownBefore(v *suspension) bool {
	if rw, rv := w.waitingOn.rank(), v.waitingOn.rank(); rw != rv {
		return rw < rv
	}
	return w.at < v.at
}

// rank orders what a run may wait on for shownBefore: 0 a hook that asks, 1 another
// hook, 2 anything else.
func (o *WaitingOn) rank() int {
	switch {
	case o != nil && o.Hook != "" && o.Ask != nil:
		return 0
	case o != nil && o.Hook != "":
		return 1
	}
	return 2
}
