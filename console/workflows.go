package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/guard"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/scheduler"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/wire"
)

type workflowsPage struct {
	Workflows []*catalog.Workflow
	Next      string
	Draft     string // the new workflow form's text, kept when it had problems
	Problem   *errorPage
}

const newWorkflowDraft = `name: hello
input:
  type: object
  properties:
    name: {type: string}
steps:
  - id: greet
    set: {message: "Hello, ${{ input.name }}!"}
`

func (c *Console) listWorkflows(w http.ResponseWriter, r *http.Request) {
	c.showWorkflows(w, r, http.StatusOK, workflowsPage{Draft: newWorkflowDraft})
}

func (c *Console) showWorkflows(w http.ResponseWriter, r *http.Request, status int, p workflowsPage) {
	list, next, err := c.deps.Catalog.List(r.Context(), catalog.ListWorkflowsParams{
		Page: catalog.Page{Limit: PageSize, Cursor: r.URL.Query().Get("cursor")}})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p.Workflows, p.Next = guard.ReadableWorkflows(visitOf(r).principal, list), next
	c.render(w, r, status, "workflows", "Workflows", p)
}

func (c *Console) createWorkflow(w http.ResponseWriter, r *http.Request) {
	doc := r.PostFormValue("definition")
	wf, err := c.deps.Catalog.Create(r.Context(), []byte(doc))
	if err != nil {
		status, p := c.problem(r, err)
		c.showWorkflows(w, r, status, workflowsPage{Draft: doc, Problem: &p})
		return
	}
	http.Redirect(w, r, "/console/workflows/"+url.PathEscape(wf.Name), http.StatusSeeOther)
}

type workflowPage struct {
	Workflow   *catalog.Workflow
	Versions   []*catalog.Version
	Schedules  []wire.Schedule // the published version's, with their next ticks
	WebhookURL string          // empty unless guard.WebhookVisible
	Draft      string
	Input      string
	// Fields are the run form's, from the input schema of formDefinition (its
	// properties); empty when it has none, and then the form takes raw JSON only.
	Fields []askField
	// Raw says the run form came back in its raw JSON mode.
	Raw bool
	// posted and fieldProblems are a run form sent back: what it held and what was wrong
	// at each field's pointer.
	posted        url.Values
	fieldProblems []schemas.Problem
	Problem       *errorPage
	Notice        string
}

func (c *Console) workflowPage(w http.ResponseWriter, r *http.Request) {
	c.showWorkflow(w, r, http.StatusOK, workflowPage{Notice: c.takeNotice(w, r)})
}

// showWorkflow renders a workflow's page; p may carry a draft or input the person typed.
func (c *Console) showWorkflow(w http.ResponseWriter, r *http.Request, status int, p workflowPage) {
	wf, err := c.deps.Catalog.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	versions, err := c.deps.Catalog.Versions(r.Context(), wf.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p.Workflow, p.Versions = wf, versions
	if p.Schedules, err = scheduler.Upcoming(r.Context(), c.deps.Catalog, wf, time.Now()); err != nil {
		c.fail(w, r, err)
		return
	}
	if guard.WebhookVisible(visitOf(r).principal, wf) {
		token, err := c.deps.Catalog.WebhookToken(wf)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		p.WebhookURL = api.WebhookURL(c.baseURL(), token)
	}
	if p.Draft == "" {
		p.Draft = indent(wf.Definition)
	}
	if p.Input == "" {
		p.Input = "{}"
	}
	p.Fields = inputFields(formDefinition(wf, versions, p.posted.Get("environment")), p.posted, p.fieldProblems)
	c.render(w, r, status, "workflow", wf.Name, p)
}

func indent(raw json.RawMessage) string {
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") != nil {
		return string(raw)
	}
	return out.String()
}

// baseURL is the public origin for webhook addresses, as the API gives them.
func (c *Console) baseURL() string { return strings.TrimSuffix(c.cfg.BaseURL, "/") }

// saveDraft replaces the draft from the editor (JSON or YAML); problems are shown at
// their JSON pointers beside the text as typed.
func (c *Console) saveDraft(w http.ResponseWriter, r *http.Request) {
	doc := r.PostFormValue("definition")
	rev, _ := strconv.Atoi(r.PostFormValue("rev"))
	wf, err := c.deps.Catalog.Update(r.Context(), chi.URLParam(r, "id"), []byte(doc), rev)
	if err != nil {
		status, p := c.problem(r, err)
		c.showWorkflow(w, r, status, workflowPage{Draft: doc, Problem: &p})
		return
	}
	c.backToWorkflow(w, r, wf.Name, "Draft saved as rev "+strconv.Itoa(wf.Rev)+".")
}

func (c *Console) backToWorkflow(w http.ResponseWriter, r *http.Request, name, notice string) {
	c.redirectWithNotice(w, r, "/console/workflows/"+url.PathEscape(name), notice)
}

func (c *Console) publish(w http.ResponseWriter, r *http.Request) {
	v, created, err := c.deps.Catalog.Publish(r.Context(), chi.URLParam(r, "id"), visitOf(r).principal)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	notice := "Published version " + strconv.Itoa(v.Version) + "."
	if !created {
		notice = "The draft is unchanged since version " + strconv.Itoa(v.Version) + "; nothing new was published."
	}
	c.backToWorkflow(w, r, chi.URLParam(r, "id"), notice)
}

func (c *Console) unpublish(w http.ResponseWriter, r *http.Request) {
	wf, err := c.deps.Catalog.Unpublish(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.backToWorkflow(w, r, wf.Name, "Unpublished: its tool is withdrawn.")
}

// startRun starts a run with the input of the run form: its fields, or the raw JSON when
// that mode was chosen. A problem comes back beside the field it is about.
func (c *Console) startRun(w http.ResponseWriter, r *http.Request) {
	raw := r.PostFormValue("mode") == "raw"
	input, err := runInput(r, raw)
	if err == nil {
		ctx, end := c.deps.Engine.TraceAdmission(r.Context(), runner.TriggerAPI)
		var res *runner.SubmitResult
		res, err = c.deps.Engine.Submit(ctx, runner.SubmitParams{Workflow: chi.URLParam(r, "id"),
			Environment: r.PostFormValue("environment"), Input: input, By: &visitOf(r).principal})
		end(res.Answered(), err)
		if err == nil {
			http.Redirect(w, r, "/console/runs/"+url.PathEscape(res.Run.ID), http.StatusSeeOther)
			return
		}
	}
	status, p := c.problem(r, err)
	c.showWorkflow(w, r, status, workflowPage{Input: r.PostFormValue("input"), Problem: &p, Raw: raw,
		posted: r.PostForm, fieldProblems: p.Problems})
}

// formDefinition is the definition whose input schema the run form is built from: the
// latest published version's for a production run (the form's default once the workflow
// is published), the draft's for a test run or a workflow never published.
func formDefinition(wf *catalog.Workflow, versions []*catalog.Version, env string) json.RawMessage {
	if env == "test" || (env == "" && !wf.Published) {
		return wf.Definition
	}
	for _, v := range versions {
		if v.Version == wf.LatestVersion {
			return v.Definition
		}
	}
	return wf.Definition
}

// runInput is the run form's input: the raw JSON typed, or the object of its fields.
func runInput(r *http.Request, raw bool) (json.RawMessage, error) {
	if !raw {
		return fieldsObject(r, true)
	}
	input := strings.TrimSpace(r.PostFormValue("input"))
	if input == "" {
		input = "{}"
	}
	if !json.Valid([]byte(input)) {
		return nil, invalid("/input", "the input is not valid JSON")
	}
	return json.RawMessage(input), nil
}

// inputFields are the run form's fields from a definition's input schema, with what was
// posted and the problems found at each field's pointer.
func inputFields(def json.RawMessage, posted url.Values, problems []schemas.Problem) []askField {
	var d struct {
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(def, &d)
	fields := askFields(d.Input)
	for i := range fields {
		f := &fields[i]
		f.Value = posted.Get("field." + f.Name)
		for _, pr := range problems {
			if pr.Path == "/"+f.Name || strings.HasPrefix(pr.Path, "/"+f.Name+"/") {
				f.Problem = pr.Message
			}
		}
	}
	return fields
}
