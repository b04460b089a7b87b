// Package guard decides what a principal may do with workflows, runs and hooks (SPEC §9),
// below every face: REST, MCP and the console ask the same Guard.
package guard

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/runner"
)

// Guard decides what a principal may do with workflows, runs and hooks (SPEC §9). REST
// routes and MCP companion tools both ask it, so the two faces cannot disagree.
type Guard struct {
	catalog Catalog
	engine  *runner.Engine
}

// Catalog is what a Guard reads from the catalog; *catalog.Service has it.
type Catalog interface {
	Resolve(ctx context.Context, idOrName, env string) (*runner.Target, error)
	Get(ctx context.Context, idOrName string) (*catalog.Workflow, error)
	List(ctx context.Context, p catalog.ListWorkflowsParams) ([]*catalog.Workflow, string, error)
}

// New returns a Guard over the catalog and the engine.
func New(cat Catalog, engine *runner.Engine) *Guard {
	return &Guard{catalog: cat, engine: engine}
}

// Workflow checks perm on workflow idOrName as env runs it: its tags are those of the
// latest published version in production (of the draft when there is none), of the draft
// in test, where running also needs workflows:write. An unknown workflow is its error.
func (g *Guard) Workflow(ctx context.Context, p auth.Principal, perm auth.Permission, idOrName, env string) error {
	if env == runner.EnvTest && perm == auth.RunsWrite {
		if err := p.Scopes.Require(auth.WorkflowsWrite, auth.Target{}); err != nil {
			return err
		}
	}
	if p.Scopes.AllowsAll(perm) {
		return nil
	}
	t, err := g.catalog.Resolve(ctx, idOrName, env)
	if err != nil && errors.Is(err, runner.ErrNotPublished) {
		t, err = g.catalog.Resolve(ctx, idOrName, runner.EnvTest)
	}
	if err != nil {
		return err
	}
	return p.Scopes.Require(perm, runner.TargetOf(t.Name, t.Definition))
}

// Run checks that p may act on run id with perm: perm on its workflow, or for runs:read
// having started it. A principal holding perm on every workflow passes without a lookup,
// so the route's own checks (and its 404) come first.
func (g *Guard) Run(ctx context.Context, p auth.Principal, perm auth.Permission, id string) error {
	if p.Scopes.AllowsAll(perm) {
		return nil
	}
	r, err := g.engine.Get(ctx, id)
	if err != nil {
		return err
	}
	return g.RunAllowed(p, perm, r)
}

// RunAllowed checks that p may act on the run r with perm (see Run), without a lookup.
func (g *Guard) RunAllowed(p auth.Principal, perm auth.Permission, r *runner.Run) error {
	return p.RequireRun(perm, r.StartedBy, runner.TargetOf(r.Workflow, r.Definition))
}

// Rerun checks that p may rerun run id. A rerun starts the run's workflow anew, at its
// current version, in the run's environment: it needs runs:write on the run (whose input it
// reuses) and what starting that workflow there needs (Workflow): the current version's
// tags, not the old run's, and for a test run, which runs the draft, workflows:write.
func (g *Guard) Rerun(ctx context.Context, p auth.Principal, id string) error {
	run, err := g.engine.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := g.RunAllowed(p, auth.RunsWrite, run); err != nil {
		return err
	}
	return g.Workflow(ctx, p, auth.RunsWrite, run.WorkflowID, run.Environment)
}

// Hook checks perm on the run owning the active hook token in env; no active hook →
// runner.ErrNotFound, unless p holds perm on every workflow (then no lookup).
func (g *Guard) Hook(ctx context.Context, p auth.Principal, perm auth.Permission, env, token string) error {
	if p.Scopes.AllowsAll(perm) {
		return nil
	}
	h, err := g.engine.Hook(ctx, env, token)
	if err != nil {
		return err
	}
	return g.Run(ctx, p, perm, h.RunID)
}

// ReadableRuns is the filter of the runs p may list: nil when it reads every run, else its
// own and those of the workflows its runs:read scopes name.
func (g *Guard) ReadableRuns(ctx context.Context, p auth.Principal) (*runner.Readable, error) {
	if p.Scopes.AllowsAll(auth.RunsRead) {
		return nil, nil
	}
	f := &runner.Readable{StartedBy: p.ID}
	if !p.Scopes.AllowsAny(auth.RunsRead) {
		return f, nil
	}
	err := g.eachWorkflow(ctx, func(w *catalog.Workflow) {
		if p.Scopes.Allows(auth.RunsRead, runner.TargetOf(w.Name, w.Definition)) {
			f.WorkflowIDs = append(f.WorkflowIDs, w.ID)
		}
	})
	return f, err
}

// noWorkflow is an ID no workflow has (IDs are UUIDv7): runs filtered to it are none.
const noWorkflow = "00000000-0000-0000-0000-000000000000"

// ListedWorkflow is the ID of the workflow idOrName that a run list for p is filtered to
// (REST ?workflow=, gorunner_list_runs' workflow). A principal that reads every run is told
// that no workflow has that name or ID (catalog.ErrNotFound). Any other gets noWorkflow and
// so, like for a workflow whose runs it may not read and started none of, a list with
// nothing in it: the same answer, so the list does not tell which workflows exist. The
// store is still asked, so a bad cursor is refused alike.
func (g *Guard) ListedWorkflow(ctx context.Context, p auth.Principal, idOrName string) (string, error) {
	w, err := g.catalog.Get(ctx, idOrName)
	switch {
	case err == nil:
		return w.ID, nil
	case errors.Is(err, catalog.ErrNotFound) && !p.Scopes.AllowsAll(auth.RunsRead):
		return noWorkflow, nil
	}
	return "", err
}

// ReadableWorkflows keeps the workflows of list whose drafts p may read.
func ReadableWorkflows(p auth.Principal, list []*catalog.Workflow) []*catalog.Workflow {
	if p.Scopes.AllowsAll(auth.RunsRead) {
		return list
	}
	out := make([]*catalog.Workflow, 0, len(list))
	for _, w := range list {
		if p.Scopes.Allows(auth.RunsRead, runner.TargetOf(w.Name, w.Definition)) {
			out = append(out, w)
		}
	}
	return out
}

// WebhookVisible reports whether p may see workflow w's webhook address. The address
// starts runs without a token, so only who may start them sees it: runs:write on w (by
// its draft's tags), or workflows:write, which may rotate it and is handed it then.
func WebhookVisible(p auth.Principal, w *catalog.Workflow) bool {
	return p.Scopes.AllowsAll(auth.WorkflowsWrite) || p.Scopes.Allows(auth.RunsWrite, runner.TargetOf(w.Name, w.Definition))
}

// eachWorkflow calls fn with every workflow, page by page.
func (g *Guard) eachWorkflow(ctx context.Context, fn func(*catalog.Workflow)) error {
	p := catalog.ListWorkflowsParams{Page: catalog.Page{Limit: limits.MaxPage}}
	for {
		list, next, err := g.catalog.List(ctx, p)
		if err != nil {
			return fmt.Errorf("listing workflows: %w", err)
		}
		for _, w := range list {
			fn(w)
		}
		if next == "" {
			return nil
		}
		p.Cursor = next
	}
}
