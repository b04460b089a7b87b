package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorunner/gorunner/runner"
)

var _ runner.Workflows = (*Service)(nil)

// Resolve tells the runner what a new run of a workflow executes: in production the latest
// published version, in test the draft. It implements runner.Workflows.
func (s *Service) Resolve(ctx context.Context, idOrName, env string) (*runner.Target, error) {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("workflow %q: %w", idOrName, runner.ErrWorkflowNotFound)
	}
	if err != nil {
		return nil, err
	}
	if env == runner.EnvTest {
		return &runner.Target{WorkflowID: w.ID, Name: w.Name, Definition: w.Definition}, nil
	}
	if !w.Published || w.LatestVersion == 0 {
		return nil, fmt.Errorf("workflow %q: %w", w.Name, runner.ErrNotPublished)
	}
	v, err := s.store.GetVersion(ctx, w.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the latest version of %q: %w", w.Name, err)
	}
	return &runner.Target{WorkflowID: w.ID, Name: w.Name, Version: v.Version, Definition: v.Definition}, nil
}
