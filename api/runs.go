package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/admission"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// MaxWait is the longest ?wait= a GET of a run may hold the answer.
const MaxWait = 60 * time.Second

// environmentOf reads ?environment=production|test (default production).
func environmentOf(r *http.Request) (string, error) {
	switch env := r.URL.Query().Get("environment"); env {
	case "", runner.EnvProduction:
		return runner.EnvProduction, nil
	case runner.EnvTest:
		return runner.EnvTest, nil
	default:
		return "", badRequest("/environment", "environment must be production or test")
	}
}

func (s *Server) runWorkflow(w http.ResponseWriter, r *http.Request) {
	env, err := environmentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := chi.URLParam(r, "id")
	name := id
	if _, keyed := r.Header[idempotency.HeaderKey]; keyed {
		if wf, err := s.deps.Catalog.Get(r.Context(), id); err == nil {
			name = wf.Name
		}
	}
	res, err := s.admit(r, principalKeyed, id, name, env)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	idempotency.WriteResponse(w, res.Response)
}

// admit starts a run of workflow (named name) in env with the request body as its input,
// through the one admission path (SPEC §4 with a key).
func (s *Server) admit(r *http.Request, k keyed, workflow, name, env string) (*admission.Result, error) {
	req, err := s.admissionOf(r, k, workflow, name, env)
	if err != nil {
		return nil, err
	}
	return admission.Start(r.Context(), s.deps.Engine, s.deps.Idempotency, req)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	p := runner.ListRunsParams{Status: runner.Status(q.Get("status")), Limit: page.Limit, Cursor: page.Cursor}
	if p.Status != "" && !p.Status.Valid() {
		s.writeError(w, r, badRequest("/status", "status must be one of "+runner.StatusList()))
		return
	}
	if p.Trigger = q.Get("trigger"); p.Trigger != "" && !runner.ValidTriggerType(p.Trigger) {
		s.writeError(w, r, badRequest("/trigger", "trigger must be one of "+strings.Join(runner.TriggerTypes(), ", ")))
		return
	}
	pr := principalOf(r)
	if name := q.Get("workflow"); name != "" {
		if p.WorkflowID, err = s.guard.ListedWorkflow(r.Context(), pr, name); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if p.Readable, err = s.guard.ReadableRuns(r.Context(), pr); err != nil {
		s.writeError(w, r, err)
		return
	}
	runs, next, err := boundedPage(p.Limit, func(limit int) ([]*wire.Run, string, error) {
		p.Limit = limit
		runs, next, err := s.deps.Engine.List(r.Context(), p)
		return wire.RunsOf(runs, true), next, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody{Data: nonNil(runs), NextCursor: next})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			s.writeError(w, r, badRequest("/wait", "wait must be a duration such as 30s"))
			return
		}
		wait = min(d, MaxWait)
	}
	if wait > 0 {
		p := principalOf(r)
		release, err := s.deps.Engine.ReserveWait(p.ID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
		holdOpen(w)
	}
	run, err := s.deps.Engine.Wait(r.Context(), id, wait)
	if err == nil {
		run, err = s.deps.Engine.Place(r.Context(), run)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, wire.RunOf(run))
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.deps.Engine.Cancel(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, wire.RunOf(run))
}

// deleteRun deletes an ended run (SPEC §2, retention): 204; an active one → 409.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	if err := s.deps.Engine.DeleteRun(r.Context(), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// rerunRun reruns a run; ?from=failure takes over the steps a failed run completed before
// its failure (runner.Engine.RerunFromFailure).
func (s *Server) rerunRun(w http.ResponseWriter, r *http.Request) {
	rerun := s.deps.Engine.Rerun
	switch r.URL.Query().Get("from") {
	case "":
	case "failure":
		rerun = s.deps.Engine.RerunFromFailure
	default:
		s.writeError(w, r, badRequest("/from", "from must be failure, or left out"))
		return
	}
	run, err := rerun(r.Context(), chi.URLParam(r, "id"), starterOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	idempotency.SetRunID(w, run.ID)
	writeData(w, http.StatusAccepted, wire.RunOf(run))
}

func (s *Server) rerunMany(w http.ResponseWriter, r *http.Request) {
	var body rerunManyBody
	if err := decodeJSON(r, &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	p := runner.RerunManyParams{RunIDs: body.RunIDs, Status: body.Status, By: starterOf(r)}
	if body.Workflow != "" {
		wf, err := s.deps.Catalog.Get(r.Context(), body.Workflow)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		p.Workflow = wf.ID
	}
	if err := s.mayRerun(r, p); err != nil {
		s.writeError(w, r, err)
		return
	}
	runs, err := s.deps.Engine.RerunMany(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, listBody{Data: wire.RunsOf(runs, false)})
}

func (s *Server) getHook(w http.ResponseWriter, r *http.Request) {
	env, err := environmentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h, err := s.deps.Engine.Hook(r.Context(), env, chi.URLParam(r, "token"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ask, err := s.deps.Engine.Question(r.Context(), h)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, wire.HookOf(h, ask))
}

func (s *Server) resumeHook(w http.ResponseWriter, r *http.Request) {
	env, err := environmentOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	payload, err := readValue(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	token := chi.URLParam(r, "token")
	res, err := s.deps.Engine.Deliver(r.Context(), env, token, payload, runner.ResumeWait)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	idempotency.SetRunID(w, res.Run.ID)
	writeData(w, http.StatusAccepted, wire.ResumeOf(token, res))
}

// mayRerun checks, before any starts, that p may rerun every run a bulk rerun would
// start (see mayRerunRun): by ID, each run; by workflow and status, the workflow in
// production, and in test too when a test run matches.
func (s *Server) mayRerun(r *http.Request, p runner.RerunManyParams) error {
	pr := principalOf(r)
	if (pr.Scopes.AllowsAll(auth.RunsWrite) && pr.Scopes.AllowsAll(auth.WorkflowsWrite)) || len(p.RunIDs) > runner.MaxBulkRerun {
		return nil
	}
	for _, id := range p.RunIDs {
		if err := s.mayRerunRun(r, pr, id); err != nil {
			return err
		}
	}
	if len(p.RunIDs) > 0 || p.Workflow == "" { // none: the runner's 400
		return nil
	}
	if err := s.guard.Workflow(r.Context(), pr, auth.RunsWrite, p.Workflow, runner.EnvProduction); err != nil {
		return err
	}
	tests, _, err := runner.Collect(1, "", func(limit int, cursor string) ([]*runner.Run, string, error) {
		return s.deps.Engine.List(r.Context(), runner.ListRunsParams{WorkflowID: p.Workflow, Status: p.Status,
			Environment: runner.EnvTest, Limit: limit, Cursor: cursor})
	})
	if err != nil || len(tests) == 0 {
		return err
	}
	return s.guard.Workflow(r.Context(), pr, auth.RunsWrite, p.Workflow, runner.EnvTest)
}
