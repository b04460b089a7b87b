package console

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
)

// check decides whether the signed-in principal may use a page or a form (SPEC §9): the
// console asks the same guard.Guard as the REST routes, so the two faces cannot disagree.
type check func(r *http.Request, p auth.Principal) error

// allow answers 403 with the error page, naming the missing scope, unless ok passes.
func (c *Console) allow(ok check) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := ok(r, visitOf(r).principal); err != nil {
				c.fail(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// every needs perm on every workflow (admin, workflows:write, or perm not narrowed).
func every(perm auth.Permission) check {
	return func(_ *http.Request, p auth.Principal) error {
		if p.Scopes.AllowsAll(perm) {
			return nil
		}
		return &auth.ForbiddenError{Missing: auth.Scope{Permission: perm}}
	}
}

// some needs perm on some workflows; the page shows only what the scopes allow.
func some(perm auth.Permission) check {
	return func(_ *http.Request, p auth.Principal) error {
		if p.Scopes.AllowsAny(perm) {
			return nil
		}
		return &auth.ForbiddenError{Missing: auth.Scope{Permission: perm}}
	}
}

// readWorkflow needs runs:read on the {id} workflow's draft.
func (c *Console) readWorkflow(r *http.Request, p auth.Principal) error {
	return c.guard.Workflow(r.Context(), p, auth.RunsRead, chi.URLParam(r, "id"), runner.EnvTest)
}

// runWorkflow needs runs:write on the {id} workflow in the form's environment.
func (c *Console) runWorkflow(r *http.Request, p auth.Principal) error {
	env := r.PostFormValue("environment")
	if env == "" {
		env = runner.EnvProduction
	}
	return c.guard.Workflow(r.Context(), p, auth.RunsWrite, chi.URLParam(r, "id"), env)
}

// onRun needs perm on the {id} run (runs:read: or having started it).
func (c *Console) onRun(perm auth.Permission) check {
	return func(r *http.Request, p auth.Principal) error {
		err := c.guard.Run(r.Context(), p, perm, chi.URLParam(r, "id"))
		return err
	}
}

// resume needs runs:write on the run owning the form's hook token.
func (c *Console) resume(r *http.Request, p auth.Principal) error {
	return c.guard.Hook(r.Context(), p, auth.RunsWrite, r.PostFormValue("environment"), r.PostFormValue("token"))
}
