package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// access is the scope column of the route table: the permission a route needs and what it
// is checked on (SPEC §9). A refused call is 403 FORBIDDEN naming the missing scope. The
// zero access fails closed: a route whose row names nothing needs admin.
type access struct {
	perm auth.Permission
	on   accessOn
}

// accessOn says what a route's permission is checked on.
type accessOn int

const (
	// onEvery needs perm on every workflow: admin, workflows:write, or perm not narrowed.
	onEvery accessOn = iota
	// onSome needs perm on some workflows; the handler keeps what the scopes allow.
	onSome
	// onWorkflow checks perm on the {id} workflow (a test run also needs workflows:write).
	onWorkflow
	// onRun checks perm on the {id} run's workflow; a run is readable by its starter too.
	onRun
	// onRerun checks perm on the {id} run's workflow and what starting its workflow anew in
	// its environment needs (see Server.mayRerunRun).
	onRerun
	// onHook checks perm on the run owning the {token} hook.
	onHook
	// onOwn lets every principal in; the handler answers with its own things only.
	onOwn
)

func need(perm auth.Permission, on accessOn) access { return access{perm: perm, on: on} }

// String says what the route needs, for the OpenAPI document.
func (a access) String() string {
	switch {
	case a.on == onOwn:
		return "any token (answers only what it may read)"
	case a.perm == "":
		return string(auth.Admin)
	}
	s := string(a.perm)
	switch a.on {
	case onSome:
		s += " on some workflows (the answer holds only what the token may read or act on)"
	case onWorkflow:
		s += " on the workflow"
		if a.perm == auth.RunsWrite {
			s += "; environment=test also needs workflows:write"
		}
	case onRun:
		s += " on the run's workflow"
		if a.perm == auth.RunsRead {
			s += ", or having started the run"
		}
	case onRerun:
		s += " on the run's workflow and on its current version; a test run also needs workflows:write"
	case onHook:
		s += " on the workflow of the run owning the hook"
	}
	return s
}

// authenticated is the access of a route open to every token: it answers with the
// principal's own things only.
var authenticated = access{on: onOwn}

// authorize refuses a request beyond the principal's scopes before anything else runs.
func (s *Server) authorize(a access) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := s.check(r, a); err != nil {
				s.writeError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func (s *Server) check(r *http.Request, a access) error {
	p, ctx := principalOf(r), r.Context()
	switch {
	case a.on == onOwn:
		return nil
	case a.perm == "":
		return p.Scopes.Require(auth.Admin, auth.Target{})
	case a.on == onEvery:
		if !p.Scopes.AllowsAll(a.perm) {
			return &auth.ForbiddenError{Missing: auth.Scope{Permission: a.perm}}
		}
		return nil
	case a.on == onSome:
		if !p.Scopes.AllowsAny(a.perm) {
			return &auth.ForbiddenError{Missing: auth.Scope{Permission: a.perm}}
		}
		return nil
	case a.on == onRun:
		err := s.guard.Run(ctx, p, a.perm, chi.URLParam(r, "id"))
		return err
	case a.on == onRerun:
		return s.mayRerunRun(r, p, chi.URLParam(r, "id"))
	}
	env := runner.EnvTest // reading a workflow is reading its draft
	if a.on == onHook || a.perm == auth.RunsWrite {
		var err error
		if env, err = environmentOf(r); err != nil {
			return err
		}
	}
	if a.on == onHook {
		return s.guard.Hook(ctx, p, a.perm, env, chi.URLParam(r, "token"))
	}
	return s.guard.Workflow(ctx, p, a.perm, chi.URLParam(r, "id"), env)
}

// mayRerunRun checks that p may rerun run id (guard.Rerun).
func (s *Server) mayRerunRun(r *http.Request, p auth.Principal, id string) error {
	return s.guard.Rerun(r.Context(), p, id)
}
