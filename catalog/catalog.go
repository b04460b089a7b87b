// Package catalog manages workflows: drafts with revisions, immutable published versions,
// webhook addresses, connections (credentials for HTTP steps, sealed at rest) and the
// templates shipped with GoRunner. It validates every definition it keeps and answers the
// runner's questions about what a new run executes.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/internal/seal"
	"github.com/gorunner/gorunner/schemas"
)

// Config configures a Service. A nil *Config means defaults.
type Config struct {
	// Now is the clock; default time.Now.
	Now func() time.Time
	// SecretKey is the 32-byte secret key (a process's <data-dir>/secret.key). Connection
	// secrets are sealed under it, and webhook tokens under keys derived from it: the store
	// keeps a keyed digest of each token and the token sealed, never the token itself.
	// Without it creating a connection fails, and the webhook keys derive from a random key
	// of this Service's own: its webhooks work while it lives, but tokens it made are found
	// and shown by no other Service, nor it by theirs.
	SecretKey []byte
	// CustomKinds are step kinds an embedder registered with the runner.
	CustomKinds map[string]bool
	// Templates holds the template definitions (*.yaml / *.json at its root); nil = none.
	Templates fs.FS
}

func (c *Config) withDefaults() *Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return &out
}

func (c *Config) validate() error {
	if c.SecretKey != nil && len(c.SecretKey) != 32 {
		return fmt.Errorf("catalog: secret key must be 32 bytes, got %d", len(c.SecretKey))
	}
	return nil
}

// Service is the catalog's entry point.
type Service struct {
	store  Store
	cfg    *Config
	sealer *sealer
	// webhooks digests and seals webhook tokens.
	webhooks *webhookKeys
	// targets keeps Resolve's production answers while the catalog version stands.
	targets targets

	hooksMu  sync.RWMutex
	hooks    map[int]ChangeHook
	nextHook int
}

// ChangeHook is told, synchronously and before the write's method returns, that a write of
// this Service changed the workflow with that ID: created, updated, deleted, published or
// unpublished. It runs after the write committed; it cannot undo it.
type ChangeHook func(ctx context.Context, workflowID string)

// OnChange registers h for every later change made through this Service (SPEC §5 "read your
// writes": the MCP server updates its tool set before a publish is answered). The returned
// func unregisters it.
func (s *Service) OnChange(h ChangeHook) (unregister func()) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	if s.hooks == nil {
		s.hooks = map[int]ChangeHook{}
	}
	id := s.nextHook
	s.nextHook++
	s.hooks[id] = h
	return func() {
		s.hooksMu.Lock()
		defer s.hooksMu.Unlock()
		delete(s.hooks, id)
	}
}

// changed tells the hooks that the workflow with id changed, and passes err through: it
// is called with a write's outcome, and says nothing of a write that failed.
func (s *Service) changed(ctx context.Context, id string, err error) error {
	if err != nil {
		return err
	}
	s.hooksMu.RLock()
	defer s.hooksMu.RUnlock()
	for _, h := range s.hooks {
		h(context.WithoutCancel(ctx), id)
	}
	return nil
}

// New returns a Service over store.
func New(store Store, cfg *Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{store: store, cfg: cfg}
	if cfg.SecretKey != nil {
		sl, err := newSealer(cfg.SecretKey)
		if err != nil {
			return nil, err
		}
		s.sealer = sl
	}
	webhookSecret, err := seal.OrRandom(cfg.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("catalog: webhook key: %w", err)
	}
	wk, err := newWebhookKeys(webhookSecret)
	if err != nil {
		return nil, err
	}
	s.webhooks = wk
	return s, nil
}

// Version returns one version of the workflow with that ID; version 0 means the latest.
func (s *Service) Version(ctx context.Context, workflowID string, version int) (*Version, error) {
	return s.store.GetVersion(ctx, workflowID, version)
}

// CatalogVersion is a counter that moves whenever the set of tools may have changed.
func (s *Service) CatalogVersion(ctx context.Context) (int64, error) {
	return s.store.CatalogVersion(ctx)
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// Parse decodes and validates a definition document (JSON or YAML). Invalid documents
// give a *schemas.ValidationError listing every problem.
func (s *Service) Parse(data []byte) (*schemas.Definition, error) {
	return schemas.Check(data, schemas.ValidateOptions{CustomKinds: s.cfg.CustomKinds})
}

// Create stores a new workflow whose draft is the document data, at rev 1.
func (s *Service) Create(ctx context.Context, data []byte) (*Workflow, error) {
	def, err := s.Parse(data)
	if err != nil {
		return nil, err
	}
	return s.create(ctx, def)
}

func (s *Service) create(ctx context.Context, def *schemas.Definition) (*Workflow, error) {
	canon, err := schemas.Canonical(def)
	if err != nil {
		return nil, err
	}
	token, err := NewWebhookToken()
	if err != nil {
		return nil, err
	}
	id := uuid.Must(uuid.NewV7()).String()
	digest, sealed, err := s.webhooks.keep(token, id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	w := &Workflow{
		ID:            id,
		Name:          def.Name,
		Title:         def.Title,
		Description:   def.Description,
		Rev:           1,
		Definition:    canon,
		WebhookDigest: digest,
		WebhookSealed: sealed,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	if err := s.store.CreateWorkflow(ctx, w); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, fmt.Errorf("a workflow named %q already exists: %w", def.Name, ErrConflict)
		}
		return nil, fmt.Errorf("creating workflow %q: %w", def.Name, err)
	}
	return w, s.changed(ctx, w.ID, nil)
}

// Get finds a workflow by ID or name.
func (s *Service) Get(ctx context.Context, idOrName string) (*Workflow, error) {
	return s.store.GetWorkflow(ctx, idOrName)
}

// List lists workflows by name.
func (s *Service) List(ctx context.Context, p ListWorkflowsParams) ([]*Workflow, string, error) {
	return s.store.ListWorkflows(ctx, p)
}

// Update replaces a workflow's draft. expectedRev > 0 must match the current rev.
func (s *Service) Update(ctx context.Context, idOrName string, data []byte, expectedRev int) (*Workflow, error) {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	def, err := s.Parse(data)
	if err != nil {
		return nil, err
	}
	canon, err := schemas.Canonical(def)
	if err != nil {
		return nil, err
	}
	upd := &Workflow{Name: def.Name, Title: def.Title, Description: def.Description, Definition: canon}
	out, err := s.store.UpdateDraft(ctx, w.ID, upd, expectedRev, s.now())
	if errors.Is(err, ErrConflict) && expectedRev == 0 {
		return nil, fmt.Errorf("a workflow named %q already exists: %w", def.Name, ErrConflict)
	}
	return out, s.changed(ctx, w.ID, err)
}

// Duplicate copies a workflow's draft into a new workflow named name (default: the
// original's name with a "-copy" suffix).
func (s *Service) Duplicate(ctx context.Context, idOrName, name string) (*Workflow, error) {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	def, err := s.Parse(w.Definition)
	if err != nil {
		return nil, err
	}
	def.Name = name
	if name == "" {
		def.Name = copyName(w.Name)
	}
	return s.createValidated(ctx, def)
}

// createValidated validates a definition built in code (a renamed copy or template).
func (s *Service) createValidated(ctx context.Context, def *schemas.Definition) (*Workflow, error) {
	if problems := schemas.Validate(def, schemas.ValidateOptions{CustomKinds: s.cfg.CustomKinds}); len(problems) > 0 {
		return nil, &schemas.ValidationError{Problems: problems}
	}
	return s.create(ctx, def)
}

func copyName(name string) string {
	const suffix = "-copy"
	if len(name)+len(suffix) > 64 {
		name = name[:64-len(suffix)]
	}
	return name + suffix
}

// Delete deletes a workflow; its tool disappears, its active runs finish.
func (s *Service) Delete(ctx context.Context, idOrName string) error {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if err != nil {
		return err
	}
	return s.changed(ctx, w.ID, s.store.DeleteWorkflow(ctx, w.ID, s.now()))
}

// Publish makes the draft a new version, published by by, whose runs then act within by's
// scopes (SPEC §6); an unchanged draft returns the latest version with created=false. The
// draft is validated again so no invalid version is ever made.
func (s *Service) Publish(ctx context.Context, idOrName string, by auth.Principal) (*Version, bool, error) {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if err != nil {
		return nil, false, err
	}
	def, err := s.Parse(w.Definition)
	if err != nil {
		return nil, false, err
	}
	hash, err := schemas.Hash(def)
	if err != nil {
		return nil, false, err
	}
	v, created, err := s.store.Publish(ctx, w.ID, hash, by, s.now())
	return v, created, s.changed(ctx, w.ID, err)
}

// Unpublish withdraws a workflow's tool; its versions stay.
func (s *Service) Unpublish(ctx context.Context, idOrName string) (*Workflow, error) {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	out, err := s.store.Unpublish(ctx, w.ID, s.now())
	return out, s.changed(ctx, w.ID, err)
}

// Versions lists a workflow's versions, newest first.
func (s *Service) Versions(ctx context.Context, idOrName string) ([]*Version, error) {
	w, err := s.store.GetWorkflow(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	return s.store.ListVersions(ctx, w.ID)
}

// Definition decodes a workflow's draft.
func (s *Service) Definition(w *Workflow) (*schemas.Definition, error) {
	return schemas.Decode(w.Definition)
}
