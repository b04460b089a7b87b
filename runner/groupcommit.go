package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// together is the group commit of the lists of a run running concurrently (see
// concurrently): one write at a time for the run, the lists' saves that come in while it
// is under way written together by the next. A list asking for a save waits until a write
// begun after its changes has committed them, so that a step is as durable when its save
// returns as a save of its own makes it; but N lists finishing steps at once cost about
// one write, not N written one after the other under the run's lock. The run's lock is not
// held during the write: the lists go on meanwhile, and the write is of a snapshot of the
// run taken when it began.
type together struct {
	// on says lists run concurrently: saves are committed together.
	on   bool
	cond sync.Cond // L is the execution's mu
	// writing says a write is under way; taken counts the snapshots taken for writes,
	// done the last one committed.
	writing     bool
	taken, done uint64
	// progress says a save asked of the next write records more than an attempt's start
	// (see SaveOptions.AttemptStart).
	progress bool
	// tails are the records that end a list running on a goroutine of its own, and owed,
	// for those finished whose commit was left to a later write, that write's number
	// (see deferred).
	tails map[int]bool
	owed  map[int]uint64
	// failed, once a write failed, is how every save goes on from then (flowKeep: the lease
	// is lost; flowRelease: the store failed, and the run's save at its hand-back writes
	// the records again).
	failed flow
}

// beginTogether readies the group commit of the lists about to run concurrently (x.mu
// held, no list running).
func (x *execution) beginTogether() {
	x.group = together{on: true, cond: sync.Cond{L: &x.mu}, tails: map[int]bool{}, owed: map[int]uint64{}}
}

// saveTogether is save for a list running concurrently with others (x.mu held): the run's
// changes so far are committed, by a write of this list's or of another's, before it
// returns. A save that consumes a payload is a write of its own.
func (x *execution) saveTogether(ctx context.Context, opts SaveOptions) flow {
	g := &x.group
	if opts.ConsumePayload > 0 {
		for g.writing && g.failed == flowNext {
			g.cond.Wait()
		}
		if g.failed == flowNext {
			g.progress = true
			x.writeTogether(ctx, opts.ConsumePayload)
		}
		return g.failed
	}
	g.progress = g.progress || !opts.AttemptStart
	return x.awaitWrite(ctx, g.taken+1) // a write begun after this save was asked
}

// awaitWrite waits until write n has committed, making it when no write is under way.
func (x *execution) awaitWrite(ctx context.Context, n uint64) flow {
	g := &x.group
	for g.done < n && g.failed == flowNext {
		if g.writing {
			g.cond.Wait()
			continue
		}
		x.writeTogether(ctx, 0)
	}
	return g.failed
}

// deferred reports whether the save of step i, just finished, is left to a later write:
// i ends a list running on a goroutine of its own (concurrently), so no step of its list
// begins after it. The list's goroutine gives its slot up first and then waits for that
// write (settle): the next list's first save, its attempt's start say, is the write that
// commits i, and an iteration costs one commit on its path instead of two.
func (x *execution) deferred(i int, opts SaveOptions) bool {
	g := &x.group
	if !g.on || !g.tails[i] || opts.ConsumePayload > 0 {
		return false
	}
	x.finished++
	g.progress = true
	g.owed[i] = g.taken + 1
	return true
}

// settle waits for the write that commits l's last record, when its save was deferred.
func (x *execution) settle(ctx context.Context, l *stepList) flow {
	g := &x.group
	i := l.recs[len(l.recs)-1]
	n, ok := g.owed[i]
	if !ok {
		return g.failed
	}
	delete(g.owed, i)
	return x.awaitWrite(ctx, n)
}

// writeTogether writes the run as it is now, with the records changed since the last
// write, the run's lock let go while the store writes (x.mu held on entry and return).
func (x *execution) writeTogether(ctx context.Context, consume int64) {
	g := &x.group
	g.writing = true
	g.taken++
	n := g.taken
	snap, whole, opts := x.snapshot(consume)
	x.mu.Unlock()
	err := x.e.store.SaveRun(context.WithoutCancel(ctx), x.lease, snap, opts)
	x.mu.Lock()
	g.writing = false
	defer g.cond.Broadcast()
	if err != nil {
		for _, i := range opts.Steps {
			x.touch(i) // written again by the save of the hand-back
		}
		g.failed = flowRelease
		if errors.Is(err, ErrLeaseLost) {
			g.failed = flowKeep
		} else {
			x.e.log.Error("saving run", "run", x.r.ID, "err", err)
		}
		return
	}
	g.done = n
	x.e.broker.pushed(snap, whole)
}

// snapshot is the run as a write begun now writes it, and the write's options: the step
// records changed since the last write are copied (the lists go on changing theirs) and
// are no longer to be written. The copy is whole when the run has followers here, who
// are handed it once written (broker.pushed).
func (x *execution) snapshot(consume int64) (snap *Run, whole bool, opts SaveOptions) {
	g := &x.group
	opts = SaveOptions{ConsumePayload: consume, AttemptStart: !g.progress && x.finished == 0}
	slices.Sort(x.changed)
	opts.Steps = append([]int{}, x.changed...)
	if whole = x.e.broker.following(x.r.ID); whole {
		snap = cloneRun(x.r)
	} else {
		c := *x.r
		c.Steps = slices.Clone(x.r.Steps)
		for _, i := range opts.Steps {
			rec := *c.Steps[i]
			c.Steps[i] = &rec
		}
		snap = &c
	}
	for _, i := range x.changed {
		x.marked[i] = false
	}
	x.changed, x.finished, g.progress = x.changed[:0], 0, false
	return snap, whole, opts
}
