package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// EventsHeartbeat is how often a quiet event stream sends a comment, so that proxies and
// clients keep the connection and a dead client is noticed (Config.EventsHeartbeat).
const EventsHeartbeat = 15 * time.Second

// runEvents serves GET /api/runs/{id}/events.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	if err := StreamRunEvents(w, r, s.deps.Engine, p.ID, chi.URLParam(r, "id"), s.cfg.EventsHeartbeat); err != nil {
		s.writeError(w, r, err)
	}
}

// StreamRunEvents answers with the Server-Sent Events of run id: a step event per step
// record that changed, then a status event when the run's status changed, the last event
// of each change carrying its id (EventID), and an end event after the final status. With
// a Last-Event-ID equal to the run's current EventID nothing already seen is sent again;
// any other value sends the run as it stands. A comment goes out after every heartbeat
// (0: EventsHeartbeat) without an event. An error is returned only before the stream
// starts (an unknown run: runner.ErrNotFound; runner.ErrTooManyWaits: the stream would be
// one more than principal's runner.MaxWaitsPerPrincipal waits), for the caller to answer with.
func StreamRunEvents(w http.ResponseWriter, r *http.Request, engine *runner.Engine, principal, id string, heartbeat time.Duration) error {
	run, err := engine.Get(r.Context(), id)
	if err != nil {
		return err
	}
	release, err := engine.ReserveWait(principal)
	if err != nil {
		return err
	}
	defer release()
	holdOpen(w) // a stream outlives the read and write timeouts
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	st := &eventStream{w: w, rc: rc}
	if last, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && last == EventID(run) {
		st.prev = run
	}
	states, stop := engine.Watch(id)
	defer stop()
	if heartbeat <= 0 {
		heartbeat = EventsHeartbeat
	}
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-beat.C:
			if st.comment("heartbeat") != nil {
				return nil
			}
		case cur, ok := <-states:
			if !ok || st.send(cur) != nil {
				return nil
			}
			if cur.Status.Terminal() {
				_ = st.end(cur)
				return nil
			}
		}
	}
}

// eventStream writes one client's events and remembers the state the client has.
type eventStream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	prev *runner.Run
}

// stepEvent is the data of a step event.
type stepEvent struct {
	Index int              `json:"index"`
	Step  *wire.StepRecord `json:"step"`
}

// statusEvent is the data of a status and an end event: the run without its steps.
type statusEvent struct {
	Status     runner.Status   `json:"status"`
	Output     json.RawMessage `json:"output"`
	Error      *wire.Error     `json:"error"`
	WaitingOn  *wire.WaitingOn `json:"waitingOn"`
	StartedAt  *time.Time      `json:"startedAt"`
	FinishedAt *time.Time      `json:"finishedAt"`
}

func statusOf(r *runner.Run) statusEvent {
	return statusEvent{Status: r.Status, Output: r.Output, Error: wire.ErrorOf(r.Error), WaitingOn: wire.WaitingOnOf(r.WaitingOn),
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

type event struct {
	name string
	data any
}

// send writes the events that take the client from prev to cur; the last carries cur's id.
func (st *eventStream) send(cur *runner.Run) error {
	if st.prev != nil && EventID(st.prev) == EventID(cur) {
		return nil // nothing the client has not seen
	}
	var evs []event
	for i, rec := range cur.Steps {
		if st.prev == nil || i >= len(st.prev.Steps) || stepChanged(st.prev.Steps[i], rec) {
			evs = append(evs, event{"step", stepEvent{Index: i, Step: wire.StepOf(rec)}})
		}
	}
	if st.prev == nil || st.prev.Status != cur.Status || len(evs) == 0 {
		evs = append(evs, event{"status", statusOf(cur)})
	}
	for i, ev := range evs {
		id := ""
		if i == len(evs)-1 {
			id = strconv.FormatInt(EventID(cur), 10)
		}
		if err := st.write(id, ev.name, ev.data); err != nil {
			return err
		}
	}
	st.prev = cur
	return nil
}

func (st *eventStream) end(cur *runner.Run) error {
	return st.write("", "end", statusOf(cur))
}

func (st *eventStream) write(id, name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding %s event: %w", name, err)
	}
	if id != "" {
		if _, err := fmt.Fprintf(st.w, "id: %s\n", id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	return st.rc.Flush()
}

func (st *eventStream) comment(text string) error {
	if _, err := fmt.Fprintf(st.w, ": %s\n\n", text); err != nil {
		return err
	}
	return st.rc.Flush()
}

func stepChanged(a, b *runner.StepRecord) bool {
	return a.Status != b.Status || a.Attempts != b.Attempts
}

// EventID is the id of a run's state in its event stream, derived from the durable state
// alone, so that a Last-Event-ID stays meaningful after a restart and on every process: 4
// × the sum of the steps' progress (attempts × 4 + the rank of the step's status) plus the
// rank of the run's status. Steps only move forward (pending, running, waiting, an end;
// each retry adds an attempt), and a run's status changes without a step change only
// forward (pending → running, waiting → running, running → an end), so the id grows with
// every change.
func EventID(r *runner.Run) int64 {
	var progress int64
	for _, s := range r.Steps {
		progress += int64(s.Attempts)*4 + stepRank(s.Status)
	}
	return progress*4 + runRank(r.Status)
}

func stepRank(s runner.StepStatus) int64 {
	switch s {
	case runner.StepPending:
		return 0
	case runner.StepRunning:
		return 1
	case runner.StepWaiting:
		return 2
	default:
		return 3
	}
}

// runRank orders a run's statuses. A queued run ranks as a pending one: it leaves the queue
// pending, with nothing else changed, and its next event is its start (running).
func runRank(s runner.Status) int64 {
	switch s {
	case runner.StatusQueued, runner.StatusPending:
		return 0
	case runner.StatusWaiting:
		return 1
	case runner.StatusRunning:
		return 2
	default:
		return 3
	}
}
