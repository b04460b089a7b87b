package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// The authoring tools (SPEC §5) make the REST API's catalog calls — Parse, Create, Update,
// Publish, Get, Versions — for a session that may author (mayAuthor, checked before a call
// reaches them: see callable). What they change reaches the tool sets through the catalog's
// change hook before they answer, so a tool published by a call is callable by the next.

// validateWorkflow answers every problem of a definition; nothing is saved.
func (s *Server) validateWorkflow(_ context.Context, _ string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.ValidateArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	_, err := s.deps.Catalog.Parse(a.Definition.Document())
	problems, invalid := definitionProblems(err)
	if err != nil && !invalid {
		return nil, err
	}
	return tools.Structured(tools.Validated{Valid: !invalid, Problems: problems}), nil
}

// definitionProblems are the problems of a definition the catalog refused (invalid true),
// or none ([], so that the answer lists none rather than null) for any other outcome.
func definitionProblems(err error) (problems []schemas.Problem, invalid bool) {
	var ve *schemas.ValidationError
	var de *schemas.DecodeError
	switch {
	case errors.As(err, &ve):
		return ve.Problems, true
	case errors.As(err, &de):
		return []schemas.Problem{de.Problem()}, true
	}
	return []schemas.Problem{}, false
}

// saveWorkflow creates the workflow the definition names, or replaces its draft (by name:
// renaming a workflow is the REST API's PUT). An invalid definition saves nothing and
// answers isError with its problems and the current rev.
func (s *Server) saveWorkflow(ctx context.Context, _ string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.SaveArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	doc := a.Definition.Document()
	def, err := schemas.Decode(doc)
	if problems, invalid := definitionProblems(err); invalid {
		return savedWithProblems(tools.Saved{Problems: problems}), nil
	}
	if err != nil {
		return nil, err
	}
	current, err := s.draftNamed(ctx, def.Name)
	if err != nil {
		return nil, err
	}
	var saved *catalog.Workflow
	switch {
	case current != nil:
		saved, err = s.deps.Catalog.Update(ctx, current.ID, doc, a.ExpectedRev)
	case a.ExpectedRev > 0:
		err = fmt.Errorf("there is no workflow %q at rev %d: %w (save without expectedRev to create it)", def.Name, a.ExpectedRev, catalog.ErrConflict)
	default:
		saved, err = s.deps.Catalog.Create(ctx, doc)
	}
	if problems, invalid := definitionProblems(err); invalid {
		answer := tools.Saved{Name: def.Name, Problems: problems}
		if current != nil {
			answer.Rev = current.Rev
		}
		return savedWithProblems(answer), nil
	}
	if err != nil {
		return nil, err
	}
	return tools.Structured(tools.Saved{Name: saved.Name, Rev: saved.Rev, Problems: []schemas.Problem{}}), nil
}

func savedWithProblems(answer tools.Saved) *mcp.CallToolResult {
	res := tools.Structured(answer)
	res.IsError = true
	return res
}

// draftNamed is the workflow called name, or nil if there is none (Get also finds a
// workflow by its ID, which is no name of its).
func (s *Server) draftNamed(ctx context.Context, name string) (*catalog.Workflow, error) {
	w, err := s.deps.Catalog.Get(ctx, name)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case w.Name != name:
		return nil, nil
	}
	return w, nil
}

// publishWorkflow publishes the draft, the caller its publisher (whose authority its runs
// act within, as for POST /api/workflows/{id}/publish).
func (s *Server) publishWorkflow(ctx context.Context, _ string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.NameArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	w, err := s.namedWorkflow(ctx, a.Name)
	if err != nil {
		return nil, err
	}
	v, created, err := s.deps.Catalog.Publish(ctx, w.ID, principal(ctx))
	if err != nil {
		return nil, err
	}
	return tools.Structured(tools.Published{Name: w.Name, Version: v.Version, Hash: v.Hash,
		PublishedAt: v.PublishedAt, Created: created, Definition: v.Definition}), nil
}

// namedWorkflow is the workflow called name, or catalog.ErrNotFound.
func (s *Server) namedWorkflow(ctx context.Context, name string) (*catalog.Workflow, error) {
	w, err := s.draftNamed(ctx, name)
	if err == nil && w == nil {
		err = fmt.Errorf("there is no workflow named %q: %w", name, catalog.ErrNotFound)
	}
	return w, err
}

// getWorkflow answers the draft's definition, its rev and the published versions.
func (s *Server) getWorkflow(ctx context.Context, _ string, c *tools.Call) (*mcp.CallToolResult, error) {
	var a tools.NameArgs
	if err := json.Unmarshal(c.Input, &a); err != nil {
		return nil, err
	}
	w, err := s.namedWorkflow(ctx, a.Name)
	if err != nil {
		return nil, err
	}
	versions, err := s.deps.Catalog.Versions(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	out := tools.Authored{Name: w.Name, Rev: w.Rev, Published: w.Published, Definition: w.Definition,
		Versions: make([]tools.VersionSummary, len(versions))}
	for i, v := range versions {
		out.Versions[i] = tools.VersionSummary{Version: v.Version, Hash: v.Hash, PublishedAt: v.PublishedAt}
	}
	return tools.Structured(out), nil
}

// workflowSchema answers the definition's JSON Schema and the guide to the step kinds.
func (s *Server) workflowSchema(context.Context, string, *tools.Call) (*mcp.CallToolResult, error) {
	return tools.Structured(tools.SchemaGuide{Schema: schemas.DefinitionSchema(), Guide: tools.Guide}), nil
}

// testWorkflowHandler answers gorunner_test_workflow {name, input, idempotencyKey}: a run
// of the draft in the test environment through runTool, the admission and keyed replay of
// POST /api/workflows/{name}/run?environment=test, so that it answers as the draft's own
// tool in a test session does (and a call of either replays the other). It needs runs:write
// on the workflow besides workflows:write, as that tool does.
func (s *Server) testWorkflowHandler(own mcp.Tool) server.ToolHandlerFunc {
	input := s.companionSchemas[own.Name]
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := auth.PrincipalFrom(ctx); !ok {
			return nil, errUnauthenticated
		}
		outer, problems := validArguments(rawArguments(req), input)
		if problems != nil {
			return tools.InvalidArguments(own.RawInputSchema, problems), nil
		}
		var a tools.TestArgs
		if err := json.Unmarshal(outer.Input, &a); err != nil {
			return nil, err
		}
		env := runner.EnvTest
		wf := s.workflowTool(ctx, s.envs[env], a.Name)
		if wf == nil {
			return tools.Unknown("workflow", a.Name, tools.Closest(a.Name, callScopeOf(ctx, env).names(s.envs[env].view.Load())), false), nil
		}
		call := &tools.Call{Input: a.Input, Key: outer.Key, HasKey: outer.HasKey}
		if len(call.Input) == 0 {
			call.Input = json.RawMessage("{}")
		}
		return s.runTool(ctx, req, env, wf, call, inputPath)
	}
}

// inputPath is where gorunner_test_workflow's arguments carry the workflow's input.
const inputPath = "/input"
