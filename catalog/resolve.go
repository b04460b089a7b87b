package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gorunner/gorunner/runner"
)

var _ runner.KeptWorkflows = (*Service)(nil)

// Resolve tells the runner what a new run of a workflow executes: in production the latest
// published version, in test the draft. It implements runner.Workflows.
//
// A production answer is kept for as long as the store's catalog version stands (targets),
// so an admission reads one counter instead of the workflow and its latest version.
func (s *Service) Resolve(ctx context.Context, idOrName, env string) (*runner.Target, error) {
	if env == runner.EnvTest {
		w, err := s.getForRun(ctx, idOrName)
		if err != nil {
			return nil, err
		}
		return &runner.Target{WorkflowID: w.ID, Name: w.Name, Definition: w.Definition}, nil
	}
	at, err := s.store.CatalogVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolving workflow %q: %w", idOrName, err)
	}
	if t, ok := s.targets.get(idOrName, at); ok {
		return t, nil
	}
	t, err := s.resolvePublished(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	t.CatalogVersion = at
	s.targets.put(idOrName, at, t)
	return t, nil
}

// Kept answers again Resolve's last production answer for idOrName, whatever the catalog
// version now, reading nothing: its Target.CatalogVersion says where it was current, and
// the engine's admission write checks that it still is (runner.KeptWorkflows). Never for
// an access decision: that is Resolve's.
func (s *Service) Kept(idOrName, env string) (*runner.Target, bool) {
	if env != runner.EnvProduction {
		return nil, false
	}
	return s.targets.kept(idOrName)
}

// resolvePublished reads the latest published version of a workflow.
func (s *Service) resolvePublished(ctx context.Context, idOrName string) (*runner.Target, error) {
	w, err := s.getForRun(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	if !w.Published || w.LatestVersion == 0 {
		return nil, fmt.Errorf("workflow %q: %w", w.Name, runner.ErrNotPublished)
	}
	v, err := s.store.GetVersion(ctx, w.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the latest version of %q: %w", w.Name, err)
	}
	return &runner.Target{WorkflowID: w.ID, Name: w.Name, Version: v.Version, Definition: v.Definition, Publisher: v.PublishedBy}, nil
}

// getForRun reads a live workflow for Resolve; unknown → runner.ErrWorkflowNotFound.
func (s *Service) getForRun(ctx context.Context, idOrName string) (*Workflow, error) {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("workflow %q: %w", idOrName, runner.ErrWorkflowNotFound)
	}
	return w, err
}

// Bounds of the production targets a Service keeps (targets); past either the cache starts
// again empty.
const (
	// MaxCachedTargets bounds the entries.
	MaxCachedTargets = 10_000
	// MaxCachedTargetBytes bounds the definitions kept, in bytes: entries alone would let
	// large definitions, each kept under its ID and its name, hold gigabytes.
	MaxCachedTargetBytes = 64 << 20
)

// targets keeps Resolve's production answers by the ID or name asked, each with the catalog
// version it was read at. Every store write that can change such an answer (create, update,
// publish, unpublish, delete) moves the catalog version in the same transaction or script
// (catalogtest's CatalogVersion case holds both backends to it), so an entry read at the
// version that stands now is exact, whichever process made the writes. The version is read
// before the workflow: a write between the two leaves an entry newer than its version, which
// the next read finds stale and replaces, never an old answer under a new version.
type targets struct {
	mu    sync.Mutex
	by    map[string]cachedTarget
	bytes int // the definitions' bytes in by
}

type cachedTarget struct {
	at     int64
	target runner.Target
}

func (c *targets) get(idOrName string, at int64) (*runner.Target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.by[idOrName]
	if !ok || e.at != at {
		return nil, false
	}
	t := e.target
	t.Definition = bytes.Clone(t.Definition) // the caller's own: the kept answer stays as read
	return &t, true
}

// kept is the entry of idOrName at whatever version it was read.
func (c *targets) kept(idOrName string) (*runner.Target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.by[idOrName]
	if !ok {
		return nil, false
	}
	t := e.target
	t.Definition = bytes.Clone(t.Definition)
	return &t, true
}

func (c *targets) put(idOrName string, at int64, t *runner.Target) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.by[idOrName]; ok {
		c.bytes -= len(old.target.Definition)
		delete(c.by, idOrName)
	}
	if c.by == nil || len(c.by) >= MaxCachedTargets || c.bytes+len(t.Definition) > MaxCachedTargetBytes {
		c.by, c.bytes = map[string]cachedTarget{}, 0
	}
	kept := *t
	kept.Definition = bytes.Clone(t.Definition)
	c.by[idOrName] = cachedTarget{at: at, target: kept}
	c.bytes += len(kept.Definition)
}
