package mcpserver

import (
	"context"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/tools"
)

// principal is the caller of a request whose handler has checked that it has one.
func principal(ctx context.Context) auth.Principal {
	p, _ := auth.PrincipalFrom(ctx)
	return p
}

// mayAuthor reports whether the session may list and call the authoring tools (SPEC §5):
// workflows:write on every workflow, what the REST API's create, update and publish need.
func mayAuthor(ctx context.Context) bool {
	p, ok := auth.PrincipalFrom(ctx)
	return ok && p.Scopes.AllowsAll(auth.WorkflowsWrite)
}

// callScope is which workflow tools of an environment a session may call (SPEC §5, §9):
// those with runs:write on the workflow, and in the test environment (drafts) only with
// workflows:write as well. Everything a session sees of the workflows — tools/list, the
// tools it may call, gorunner_find_workflows, gorunner_run_workflow, the closest names
// suggested on a miss — goes through it, so a session never learns of a tool it may not
// call, and calling one is answered exactly as a tool that does not exist.
type callScope struct {
	scopes auth.Scopes
	every  bool // may call every workflow tool
	none   bool // may call none
}

func callScopeOf(ctx context.Context, env string) callScope {
	p, ok := auth.PrincipalFrom(ctx)
	c := callScope{scopes: p.Scopes}
	switch {
	case !ok, env == runner.EnvTest && !p.Scopes.AllowsAll(auth.WorkflowsWrite), !p.Scopes.AllowsAny(auth.RunsWrite):
		c.none = true
	default:
		c.every = p.Scopes.AllowsAll(auth.RunsWrite)
	}
	return c
}

// allows reports whether the session may call workflow tool t.
func (c callScope) allows(t *tools.Tool) bool {
	switch {
	case c.none:
		return false
	case c.every:
		return true
	}
	return c.scopes.Allows(auth.RunsWrite, auth.Target{Workflow: t.Definition.Name, Tags: t.Definition.Tags})
}

// tools keeps the tools of list (sorted by name) the session may call.
func (c callScope) tools(list []*tools.Tool) []*tools.Tool {
	if c.every {
		return list
	}
	var out []*tools.Tool
	for _, t := range list {
		if c.allows(t) {
			out = append(out, t)
		}
	}
	return out
}

// names are the names of the tools of v the session may call, sorted.
func (c callScope) names(v *view) []string {
	if c.every {
		return v.names
	}
	var out []string
	for _, t := range c.tools(v.sorted) {
		out = append(out, t.Definition.Name)
	}
	return out
}
