package console

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

type runsPage struct {
	Runs     []*wire.Run
	Workflow string
	Status   string
	Statuses []runner.Status
	Next     template.URL // the next page's address, empty on the last
}

// listRuns lists runs, newest first, filtered by workflow and status.
func (c *Console) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := runsPage{Workflow: q.Get("workflow"), Status: q.Get("status"), Statuses: runner.Statuses()}
	params := runner.ListRunsParams{Status: runner.Status(p.Status), Limit: PageSize, Cursor: q.Get("cursor")}
	if p.Status != "" && !params.Status.Valid() {
		c.render(w, r, http.StatusBadRequest, "error", "Bad request", errorPage{Message: "Unknown run status " + strconv.Quote(p.Status) + "."})
		return
	}
	pr := visitOf(r).principal
	if p.Workflow != "" {
		var err error
		if params.WorkflowID, err = c.guard.ListedWorkflow(r.Context(), pr, p.Workflow); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	readable, err := c.guard.ReadableRuns(r.Context(), pr)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	params.Readable = readable
	runs, next, err := c.deps.Engine.List(r.Context(), params)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p.Runs = wire.RunsOf(runs, false)
	if next != "" {
		nq := url.Values{"cursor": {next}}
		for _, k := range []string{"workflow", "status"} {
			if v := q.Get(k); v != "" {
				nq.Set(k, v)
			}
		}
		p.Next = pageURL("/console/runs", nq)
	}
	c.render(w, r, http.StatusOK, "runs", "Runs", p)
}

type runPage struct {
	Run     *wire.Run
	Steps   []stepRow
	EventID int64
	Hook    *hookForm
	Notice  string
	Problem *errorPage
	Payload string
}

// stepRow is one entry of a run's timeline.
type stepRow struct {
	Name string // the step's id in the definition
	*wire.StepRecord
}

// hookForm is the resume form of a run waiting on a hook: the generic JSON payload form,
// or the fields of the hook's ask when its definition has one.
type hookForm struct {
	Token       string
	Environment string
	Ask         *ask
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	c.showRun(w, r, http.StatusOK, runPage{Notice: c.takeNotice(w, r), Payload: "{}"})
}

func (c *Console) showRun(w http.ResponseWriter, r *http.Request, status int, p runPage) {
	run, err := c.deps.Engine.Get(r.Context(), chi.URLParam(r, "id"))
	if err == nil {
		run, err = c.deps.Engine.Place(r.Context(), run)
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	steps := definitionSteps(run.Definition)
	p.Run, p.EventID = wire.RunOf(run), api.EventID(run)
	for i, rec := range run.Steps {
		row := stepRow{StepRecord: wire.StepOf(rec)}
		if i < len(steps) {
			row.Name = steps[i].ID
		}
		p.Steps = append(p.Steps, row)
	}
	if run.Status == runner.StatusWaiting && run.WaitingOn != nil && run.WaitingOn.Hook != "" {
		p.Hook = &hookForm{Token: run.WaitingOn.Hook, Environment: run.Environment, Ask: waitingAsk(run)}
	}
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
		c.showRun(w, r, status, runPage{Problem: &p, Payload: r.PostFormValue("payload")})
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
	out := map[string]any{}
	for key, values := range r.PostForm {
		name, ok := strings.CutPrefix(key, "field.")
		if !ok {
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
