package console

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// stepRow is one entry of a run's timeline: a step record with its path's depth and every
// attempt the record keeps (or the one its own times tell of).
type stepRow struct {
	Index int
	Name  string // the record's path: the step's id at the top level
	Depth int
	*wire.StepRecord
	Tries []wire.Attempt
}

func stepRows(recs []*runner.StepRecord) []stepRow {
	rows := make([]stepRow, len(recs))
	for i, rec := range recs {
		v := wire.StepOf(rec)
		rows[i] = stepRow{Index: i, Name: v.Path, Depth: strings.Count(v.Path, "/"), StepRecord: v, Tries: v.History}
		if rows[i].Tries == nil && rec.StartedAt != nil && rec.FinishedAt != nil && rec.Attempts > 0 {
			rows[i].Tries = []wire.Attempt{{Attempt: rec.Attempts, StartedAt: *rec.StartedAt, FinishedAt: *rec.FinishedAt, Error: v.Error}}
		}
	}
	return rows
}

// waitView is one thing a run waits for, with the resume form of a hook.
type waitView struct {
	runner.StepWait
	Environment string
	Ask         *ask
	Payload     string // the generic form's text, kept when a resume failed
}

func waitViews(run *runner.Run, payloadToken, payload string) []waitView {
	var out []waitView
	for _, w := range runner.Waits(run) {
		v := waitView{StepWait: w, Environment: run.Environment, Payload: "{}"}
		if w.Ask != nil {
			v.Ask = &ask{Message: w.Ask.Message, Fields: askFields(w.Ask.Schema)}
			for i := range v.Ask.Fields {
				v.Ask.Fields[i].Form = fmt.Sprintf("h%d-", w.Index)
			}
		}
		if w.Hook != "" && w.Hook == payloadToken {
			v.Payload = payload
		}
		out = append(out, v)
	}
	return out
}

// queueWait is waitingOn.queue of a queued run: its concurrency key and limit, the runs
// holding the slots (at most ten) and how many runs are ahead of it.
type queueWait struct {
	Key    string   `json:"key"`
	Limit  int      `json:"limit"`
	Active []string `json:"active"`
	Ahead  int      `json:"ahead"`
}

// otherWaits reads what a run waits on as clients see it (wire.WaitingOn, JSON) for what the
// step records do not tell: the queue of a queued run, and the names of kinds this console
// does not know, shown as they are named.
func otherWaits(w *wire.WaitingOn) (*queueWait, []string) {
	if w == nil {
		return nil, nil
	}
	raw, err := json.Marshal(w)
	if err != nil {
		return nil, nil
	}
	return waitKinds(raw)
}

// waitKinds reads waitingOn as JSON: its queue, and the kinds not known here.
func waitKinds(raw json.RawMessage) (*queueWait, []string) {
	var kinds map[string]json.RawMessage
	if json.Unmarshal(raw, &kinds) != nil {
		return nil, nil
	}
	var q *queueWait
	var unknown []string
	for k, v := range kinds {
		switch k {
		case "hook", "sleepUntil":
		case "queue":
			if string(v) == "null" {
				continue
			}
			var one queueWait
			if json.Unmarshal(v, &one) != nil {
				unknown = append(unknown, k)
				continue
			}
			q = &one
		default:
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return q, unknown
}

// gantt is a run's steps on one time axis: a bar per record, those under a top-level step
// grouped below it.
type gantt struct {
	Start, End time.Time
	Span       string
	Groups     []ganttGroup
}

type ganttGroup struct {
	Bar      ganttBar
	Children []ganttBar
}

// ganttBar places one record on the axis: X and W are percentages of the axis.
type ganttBar struct {
	Index  int
	Name   string
	Status string
	X, W   string
	Took   string
	// Start and End are the record's times, for the page's script to place the bar again as
	// the run goes on.
	Start, End *time.Time
}

func ganttOf(run *runner.Run, now time.Time) gantt {
	g := gantt{Start: run.CreatedAt, End: now}
	if run.StartedAt != nil {
		g.Start = *run.StartedAt
	}
	if run.FinishedAt != nil {
		g.End = *run.FinishedAt
	}
	for _, rec := range run.Steps { // steps taken over by a rerun began before it
		if rec.StartedAt != nil && rec.StartedAt.Before(g.Start) {
			g.Start = *rec.StartedAt
		}
		if rec.FinishedAt != nil && rec.FinishedAt.After(g.End) {
			g.End = *rec.FinishedAt
		}
	}
	span := g.End.Sub(g.Start)
	g.Span = roundDuration(span)
	groups := map[string]int{}
	for i, rec := range run.Steps {
		b := g.bar(i, rec, span, now)
		if rec.Path == "" {
			groups[rec.ID] = len(g.Groups)
			g.Groups = append(g.Groups, ganttGroup{Bar: b})
			continue
		}
		top, _, _ := strings.Cut(rec.Path, "/")
		if gi, ok := groups[top]; ok {
			g.Groups[gi].Children = append(g.Groups[gi].Children, b)
		}
	}
	return g
}

func (g gantt) bar(i int, rec *runner.StepRecord, span time.Duration, now time.Time) ganttBar {
	b := ganttBar{Index: i, Name: runner.PathOf(rec), Status: string(rec.Status), X: "0%", W: "0%", Start: rec.StartedAt, End: rec.FinishedAt}
	if rec.StartedAt == nil || span <= 0 {
		return b
	}
	end := now
	if rec.FinishedAt != nil {
		end = *rec.FinishedAt
	}
	pct := func(d time.Duration) float64 { return min(100, max(0, 100*float64(d)/float64(span))) }
	x := pct(rec.StartedAt.Sub(g.Start))
	w := max(pct(end.Sub(*rec.StartedAt)), 0.5) // an instant step still shows
	b.X, b.W = fmt.Sprintf("%.2f%%", x), fmt.Sprintf("%.2f%%", min(w, 100-x))
	b.Took = roundDuration(end.Sub(*rec.StartedAt))
	return b
}

// event is one entry of a run's history, as its records tell it.
type event struct {
	At   time.Time
	What string
	Code string // an error's code, when the entry is a failure
}

// maxEvents bounds the history a run page lists (a foreach of thousands of iterations
// tells it in its records too).
const maxEvents = 300

func historyOf(run *runner.Run) []event {
	ev := []event{{At: run.CreatedAt, What: "Run created (" + triggerName(run.Trigger) + ")"}}
	if run.StartedAt != nil {
		ev = append(ev, event{At: *run.StartedAt, What: "Run started"})
	}
	for _, rec := range run.Steps {
		ev = append(ev, stepEvents(rec)...)
	}
	if run.FinishedAt != nil {
		e := event{At: *run.FinishedAt, What: "Run " + string(run.Status)}
		if run.Error != nil {
			e.Code, e.What = run.Error.Code, e.What+": "+run.Error.Message
		}
		ev = append(ev, e)
	}
	slices.SortStableFunc(ev, func(a, b event) int { return a.At.Compare(b.At) })
	if len(ev) > maxEvents {
		ev = append(ev[:maxEvents-1], ev[len(ev)-1])
	}
	return ev
}

func stepEvents(rec *runner.StepRecord) []event {
	name := runner.PathOf(rec)
	var ev []event
	for _, a := range rec.History {
		what := fmt.Sprintf("%s attempt %d", name, a.N)
		if a.Request != "" {
			what += ": " + a.Request
			if a.Status != 0 {
				what += fmt.Sprintf(" → %d", a.Status)
			}
		}
		e := event{At: a.FinishedAt, What: what + " completed"}
		if a.Error != nil {
			e.Code, e.What = a.Error.Code, what+" failed: "+a.Error.Message
		}
		ev = append(ev, event{At: a.StartedAt, What: fmt.Sprintf("%s attempt %d started", name, a.N)}, e)
	}
	if rec.History == nil && rec.StartedAt != nil {
		ev = append(ev, event{At: *rec.StartedAt, What: name + " started"})
	}
	if rec.FinishedAt != nil && (rec.History == nil || rec.Status != runner.StepCompleted) {
		e := event{At: *rec.FinishedAt, What: name + " " + string(rec.Status)}
		if rec.Error != nil {
			e.Code, e.What = rec.Error.Code, e.What+": "+rec.Error.Message
		}
		ev = append(ev, e)
	}
	return ev
}

func triggerName(t runner.Trigger) string {
	if t.Type == "" {
		return "trigger not recorded"
	}
	return "by " + t.Type
}

// roundDuration is d as a person reads it: ms under a second, else to 0.1 s, minutes and
// hours past them.
func roundDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
