package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// confirmPage asks before a run is cancelled or deleted: the button that does it posts the
// form, so that without JavaScript too nothing is lost to a stray click.
type confirmPage struct {
	RunID    string
	Action   string // cancel or delete
	Question string
	Button   string
}

func (c *Console) confirmCancel(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	c.render(w, r, http.StatusOK, "confirm", "Cancel run", confirmPage{RunID: id, Action: "cancel",
		Question: "Cancel run " + id + "? The step running is interrupted and the steps left are cancelled.", Button: "Cancel the run"})
}

func (c *Console) confirmDelete(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	c.render(w, r, http.StatusOK, "confirm", "Delete run", confirmPage{RunID: id, Action: "delete",
		Question: "Delete run " + id + " with its steps and hooks? This cannot be undone.", Button: "Delete the run"})
}

// deleteRun deletes an ended run (an active one: 409 on the error page).
func (c *Console) deleteRun(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := c.deps.Engine.DeleteRun(r.Context(), id); err != nil {
		c.fail(w, r, err)
		return
	}
	c.redirectWithNotice(w, r, "/console/runs", "Run "+id+" deleted.")
}

// rerunRun starts a new run with the run's input; from=failure takes over the steps a
// failed run completed before its failure (runner.Engine.RerunFromFailure).
func (c *Console) rerunRun(w http.ResponseWriter, r *http.Request) {
	rerun, what := c.deps.Engine.Rerun, "Rerun"
	if r.PostFormValue("from") == "failure" {
		rerun, what = c.deps.Engine.RerunFromFailure, "Rerun from the failure"
	}
	run, err := rerun(r.Context(), chi.URLParam(r, "id"), &visitOf(r).principal)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.backToRun(w, r, run.ID, what+" of "+chi.URLParam(r, "id")+" started.")
}

// rerunMany reruns the runs the form names (the failed runs a filtered list showed), each
// checked as one rerun is, all before any starts.
func (c *Console) rerunMany(w http.ResponseWriter, r *http.Request) {
	ids := r.PostForm["run"]
	pr := visitOf(r).principal
	if len(ids) == 0 {
		c.fail(w, r, invalid("/run", "no runs to rerun"))
		return
	}
	if len(ids) <= runner.MaxBulkRerun {
		for _, id := range ids {
			if err := c.guard.Rerun(r.Context(), pr, id); err != nil {
				c.fail(w, r, err)
				return
			}
		}
	}
	runs, err := c.deps.Engine.RerunMany(r.Context(), runner.RerunManyParams{RunIDs: ids, By: &pr})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	back := "/console/runs"
	if q := r.PostFormValue("back"); q != "" {
		if v, err := url.ParseQuery(q); err == nil {
			back += "?" + v.Encode()
		}
	}
	c.redirectWithNotice(w, r, back, "Started "+strconv.Itoa(len(runs))+" reruns.")
}

// rerunAny needs runs:write somewhere; each run of a bulk rerun is checked by rerunMany.
var rerunAny = some(auth.RunsWrite)

// rerun needs what rerunning run {id} needs (guard.Guard.Rerun).
func (c *Console) rerun(r *http.Request, p auth.Principal) error {
	return c.guard.Rerun(r.Context(), p, chi.URLParam(r, "id"))
}
