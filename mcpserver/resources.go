package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/tools"
	"github.com/gorunner/gorunner/wire"
)

// runTemplate is the resource template of runs: resources/read of gorunner://runs/{runId}
// answers the run object, as GET /api/runs/{id} does.
func (s *Server) runTemplate() server.ServerResourceTemplate {
	return server.ServerResourceTemplate{
		Template: mcp.NewResourceTemplate(tools.RunURITemplate, "run",
			mcp.WithTemplateTitle("A GoRunner run"),
			mcp.WithTemplateDescription("A run's current state: status, steps, output, error (the run object of GET /api/runs/{id}). Workflow tool results link their run."),
			mcp.WithTemplateMIMEType("application/json")),
		Handler: s.readRunResource,
	}
}

// readRunResource answers resources/read of a run the caller may read.
func (s *Server) readRunResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, errUnauthenticated
	}
	id, ok := tools.RunIDOf(req.Params.URI)
	if !ok {
		return nil, fmt.Errorf("%q names no run: %w", req.Params.URI, server.ErrResourceNotFound)
	}
	run, err := s.readableRun(ctx, p, id)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(wire.RunOf(run))
	if err != nil {
		return nil, fmt.Errorf("encoding run %s: %w", id, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(body)}}, nil
}

// readableRun reads the run a resource URI names, for p.
func (s *Server) readableRun(ctx context.Context, p auth.Principal, id string) (*runner.Run, error) {
	run, err := s.ownRun(ctx, p, auth.RunsRead, id)
	if errors.Is(err, runner.ErrNotFound) {
		return nil, fmt.Errorf("resource %s: %w", tools.RunURI(id), server.ErrResourceNotFound)
	}
	return run, err
}

// ownRun reads run id for p to act on it with perm. A run p may not act on is
// runner.ErrNotFound in the same words as one that does not exist (whatever the store
// said), so that neither its existence nor its workflow is revealed.
func (s *Server) ownRun(ctx context.Context, p auth.Principal, perm auth.Permission, id string) (*runner.Run, error) {
	run, err := s.deps.Engine.Get(ctx, id)
	if errors.Is(err, runner.ErrNotFound) || (err == nil && s.access.RunAllowed(p, perm, run) != nil) {
		return nil, fmt.Errorf("reading run %s: %w", id, runner.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	return run, nil
}
