package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

type runsPage struct {
	Runs     []*wire.Run
	Waits    map[string]string // a waiting run's ID → what it waits for, in a few words
	Filter   runFilter
	Statuses []runner.Status
	Triggers []string
	Next     template.URL // the next page's address, empty on the last
	Failed   []string     // the IDs of the failed runs listed, for the bulk rerun
	CanRerun bool
	Notice   string
	Now      time.Time
}

// listRuns lists runs, newest first, filtered by workflow, status, trigger, a search text
// (a run ID, input text, an error code or message) and dates.
func (c *Console) listRuns(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r.URL.Query())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	pr := visitOf(r).principal
	p := runsPage{Filter: f, Statuses: runner.Statuses(), Triggers: runner.TriggerTypes(), Notice: c.takeNotice(w, r),
		Now: c.cfg.Now(), CanRerun: pr.Scopes.AllowsAny(auth.RunsWrite), Waits: map[string]string{}}
	params := runner.ListRunsParams{Status: runner.Status(f.Status), Trigger: f.Trigger, Cursor: r.URL.Query().Get("cursor")}
	if f.Workflow != "" {
		if params.WorkflowID, err = c.guard.ListedWorkflow(r.Context(), pr, f.Workflow); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	if params.Readable, err = c.guard.ReadableRuns(r.Context(), pr); err != nil {
		c.fail(w, r, err)
		return
	}
	var runs []*runner.Run
	var next string
	if one := c.byID(r.Context(), pr, f.Q); one != nil {
		runs = []*runner.Run{one}
	} else if runs, next, err = c.find(r.Context(), f, params); err != nil {
		c.fail(w, r, err)
		return
	}
	p.Runs = wire.RunsOf(runs, true)
	for _, run := range runs {
		if s := waitSummary(run); s != "" {
			p.Waits[run.ID] = s
		}
		if run.Status == runner.StatusFailed {
			p.Failed = append(p.Failed, run.ID)
		}
	}
	if next != "" {
		p.Next = pageURL("/console/runs", f.query(next))
	}
	c.render(w, r, http.StatusOK, "runs", "Runs", p)
}

// waitSummary says in a few words what a run waits for, for the runs list.
func waitSummary(run *runner.Run) string {
	var parts []string
	for _, w := range runner.Waits(run) {
		switch {
		case w.Hook != "":
			parts = append(parts, "hook "+w.Hook)
		case w.SleepUntil != nil:
			parts = append(parts, "sleep until "+w.SleepUntil.UTC().Format("2006-01-02 15:04:05Z"))
		case w.ChildRunID != "":
			parts = append(parts, "child run "+w.ChildRunID)
		case w.RetryAt != nil:
			parts = append(parts, w.Path+" retry at "+w.RetryAt.UTC().Format("15:04:05Z"))
		}
	}
	if q, _ := otherWaits(wire.WaitingOnOf(run.WaitingOn)); q != nil {
		parts = append(parts, fmt.Sprintf("queue %s (%d ahead)", q.Key, q.Ahead))
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("and %d more", len(parts)-3))
	}
	return strings.Join(parts, "; ")
}

type runPage struct {
	Run       *wire.Run
	Steps     []stepRow
	EventID   int64
	Waits     []waitView
	Queue     *queueWait
	Unknown   []string // waitingOn kinds this console does not know
	Gantt     gantt
	History   []event
	Can       runActions
	Notice    string
	Problem   *errorPage
	Now       time.Time
	InputJSON string
}

// runActions are the buttons a run page shows: those the principal's scopes allow.
type runActions struct {
	Write, Rerun bool
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	c.showRun(w, r, http.StatusOK, runPage{Notice: c.takeNotice(w, r)}, "", "")
}

// showRun renders run {id}'s page; a resume that failed keeps its payload in the form of
// its token.
func (c *Console) showRun(w http.ResponseWriter, r *http.Request, status int, p runPage, token, payload string) {
	run, err := c.deps.Engine.Get(r.Context(), chi.URLParam(r, "id"))
	if err == nil {
		run, err = c.deps.Engine.Place(r.Context(), run)
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	pr, now := visitOf(r).principal, c.cfg.Now()
	p.Run, p.EventID, p.Now = wire.RunOf(run), api.EventID(run), now
	p.Steps, p.Waits = stepRows(run.Steps), waitViews(run, token, payload)
	p.Queue, p.Unknown = otherWaits(p.Run.WaitingOn)
	p.Gantt, p.History = ganttOf(run, now), historyOf(run)
	p.Can = runActions{Write: c.guard.RunAllowed(pr, auth.RunsWrite, run) == nil,
		Rerun: c.guard.Rerun(r.Context(), pr, run.ID) == nil}
	c.render(w, r, status, "run", "Run "+run.ID, p)
}

// runEvents is the run's event stream for the run page's script, behind the session.
// EventSource cannot set Last-Event-ID on its first request, so the page's event id comes
// as ?after=; on a reconnect the browser's own header wins.
func (c *Console) runEvents(w http.ResponseWriter, r *http.Request) {
	if after := r.URL.Query().Get("after"); after != "" && r.Header.Get("Last-Event-ID") == "" {
		r.Header.Set("Last-Event-ID", after)
	}
	if err := api.StreamRunEvents(w, r, c.deps.Engine, visitOf(r).principal.ID, chi.URLParam(r, "id"), 0); err != nil {
		c.fail(w, r, err)
	}
}

func (c *Console) cancelRun(w http.ResponseWriter, r *http.Request) {
	run, err := c.deps.Engine.Cancel(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.backToRun(w, r, run.ID, "Cancel requested; the run is "+string(run.Status)+".")
}

func (c *Console) backToRun(w http.ResponseWriter, r *http.Request, id, notice string) {
	c.redirectWithNotice(w, r, "/console/runs/"+url.PathEscape(id), notice)
}

// resumeHook sends the resume form's payload to the hook's token.
func (c *Console) resumeHook(w http.ResponseWriter, r *http.Request) {
	payload, err := formPayload(r)
	runID, token := r.PostFormValue("run"), r.PostFormValue("token")
	var res *runner.Resumed
	if err == nil {
		res, err = c.deps.Engine.Deliver(r.Context(), r.PostFormValue("environment"), token, payload, 0) // the run page follows the run live
	}
	if err != nil {
		// The page shown is the form's run: a run the person may not read is not shown.
		if gerr := c.guard.Run(r.Context(), visitOf(r).principal, auth.RunsRead, runID); gerr != nil {
			c.fail(w, r, gerr)
			return
		}
		status, p := c.problem(r, err)
		rctx := chi.RouteContext(r.Context())
		rctx.URLParams.Add("id", runID)
		c.showRun(w, r, status, runPage{Problem: &p}, token, r.PostFormValue("payload"))
		return
	}
	notice := "Payload delivered to " + token + "."
	if msg := res.Message(token); msg != "" {
		notice = "Payload queued: " + msg + "."
	}
	c.backToRun(w, r, runID, notice)
}

// formPayload is the payload of a resume form: the JSON typed in the generic form, or an
// object of the ask form's fields, each read as its schema type says.
func formPayload(r *http.Request) (json.RawMessage, error) {
	if r.PostFormValue("ask") == "" {
		raw := strings.TrimSpace(r.PostFormValue("payload"))
		if raw == "" {
			raw = "null"
		}
		if !json.Valid([]byte(raw)) {
			return nil, invalid("/payload", "the payload is not valid JSON")
		}
		return json.RawMessage(raw), nil
	}
	return fieldsObject(r, false)
}

// fieldsObject is the object of a form's fields (field.NAME, typed by type.NAME), each
// read as its type says; omitEmpty leaves out the empty ones.
func fieldsObject(r *http.Request, omitEmpty bool) (json.RawMessage, error) {
	out := map[string]any{}
	for key, values := range r.PostForm {
		name, ok := strings.CutPrefix(key, "field.")
		if !ok || (omitEmpty && values[0] == "") {
			continue
		}
		v, err := fieldValue(r.PostFormValue("type."+name), values[0])
		if err != nil {
			return nil, invalid("/"+name, err.Error())
		}
		if v != nil {
			out[name] = v
		}
	}
	for key := range r.PostForm { // unchecked boxes are not posted: false
		if name, ok := strings.CutPrefix(key, "type."); ok && r.PostFormValue(key) == "boolean" {
			if _, set := out[name]; !set {
				out[name] = false
			}
		}
	}
	return json.Marshal(out)
}

// pageURL is the address of a list page: the query is encoded here, so the template takes
// it as a URL as it is.
func pageURL(path string, q url.Values) template.URL {
	return template.URL(path + "?" + q.Encode())
}
