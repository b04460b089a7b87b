package runner

import (
	"context"
	"sync"
)

// Bounds of the ended runs an engine keeps in memory (endedRuns); past either, the oldest
// go first.
const (
	// MaxEndedRunsKept bounds how many ended runs are kept.
	MaxEndedRunsKept = 4096
	// MaxEndedRunsBytes bounds the bytes they hold (input, output, definition, step
	// records); a run holding more than MaxEndedRunsBytes/256 is not kept at all.
	MaxEndedRunsBytes = 16 << 20
)

// endedRuns keeps the last runs that ended here or were read ended, as they ended. An ended
// run never changes again (no write touches a run with a terminal status; it is only ever
// deleted, see Engine.DeleteRun), so Get answers one from memory: a replayed call whose run finished, a finished
// run's page, costs no store read.
type endedRuns struct {
	mu    sync.Mutex
	by    map[string]keptRun
	order []string // IDs, oldest first
	bytes int
}

// keptRun is a run kept, with its size (runBytes).
type keptRun struct {
	run  *Run
	size int
}

// get returns a copy of ended run id, if kept.
func (c *endedRuns) get(id string) (*Run, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.by[id]
	if !ok {
		return nil, false
	}
	return cloneRun(k.run), true
}

// put keeps a copy of r when it ended and is small enough, dropping the oldest runs kept
// to make room.
func (c *endedRuns) put(r *Run) {
	if keepable(r) {
		c.keep(cloneRun(r))
	}
}

// keepable reports whether r is a run endedRuns keeps: ended, and small enough.
func keepable(r *Run) bool {
	return r.Status.Terminal() && runBytes(r) <= MaxEndedRunsBytes/256
}

// keep is put of r itself, not a copy: for a run that nothing changes any more, such as the
// run an execution just ended (its pass is over), and whose holders do not change it (an
// ended run handed out by the engine is shared: Admission.Written, Wait's answers). get
// still hands out copies.
func (c *endedRuns) keep(r *Run) {
	size := runBytes(r)
	if !r.Status.Terminal() || size > MaxEndedRunsBytes/256 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.by[r.ID]; ok {
		return
	}
	if c.by == nil {
		c.by = map[string]keptRun{}
	}
	for len(c.order) > 0 && (len(c.order) >= MaxEndedRunsKept || c.bytes+size > MaxEndedRunsBytes) {
		oldest := c.order[0]
		c.order = c.order[1:]
		c.bytes -= c.by[oldest].size
		delete(c.by, oldest)
	}
	c.by[r.ID] = keptRun{r, size}
	c.order = append(c.order, r.ID)
	c.bytes += size
}

// stepRecordBytes is what a step record holds besides its strings and byte slices: the
// record, its pointer and its two times, rounded up.
const stepRecordBytes = 256

// runBytes is about what r holds: its input, output and definition, and its step records
// with their IDs and byte slices. A run of MaxSteps small steps holds ~400 kB in records
// alone, while its definition may be 20 kB: not counting them would let the ended runs
// kept hold many times MaxEndedRunsBytes.
func runBytes(r *Run) int {
	n := len(r.Input) + len(r.Output) + len(r.Definition)
	for _, s := range r.Steps {
		n += stepRecordBytes + len(s.ID) + len(s.StepID) + len(s.Output) + len(s.State) + len(s.Conflict)
	}
	return n
}

// getRun reads run id: from the ended runs kept when it is one, else from the store
// (keeping it when it ended).
func (e *Engine) getRun(ctx context.Context, id string) (*Run, error) {
	if r, ok := e.finished.get(id); ok {
		return r, nil
	}
	r, err := e.store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	e.finished.put(r)
	return r, nil
}
