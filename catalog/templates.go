package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/schemas"
)

// Template is a ready workflow definition shipped with GoRunner.
type Template struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Definition  json.RawMessage `json:"definition"`
	def         *schemas.Definition
}

// Templates lists the shipped templates, by ID (the file name without its extension).
func (s *Service) Templates() ([]*Template, error) {
	if s.cfg.Templates == nil {
		return nil, nil
	}
	entries, err := fs.ReadDir(s.cfg.Templates, ".")
	if err != nil {
		return nil, fmt.Errorf("reading templates: %w", err)
	}
	var out []*Template
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if e.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
			continue
		}
		t, err := s.loadTemplate(e.Name(), strings.TrimSuffix(e.Name(), ext))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *Service) loadTemplate(file, id string) (*Template, error) {
	data, err := fs.ReadFile(s.cfg.Templates, file)
	if err != nil {
		return nil, fmt.Errorf("reading template %s: %w", file, err)
	}
	def, err := s.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", file, err)
	}
	canon, err := schemas.Canonical(def)
	if err != nil {
		return nil, err
	}
	return &Template{ID: id, Name: def.Name, Title: def.Title, Description: def.Description, Definition: canon, def: def}, nil
}

// Template finds one template by ID.
func (s *Service) Template(id string) (*Template, error) {
	all, err := s.Templates()
	if err != nil {
		return nil, err
	}
	for _, t := range all {
		if t.ID == id {
			return t, nil
		}
	}
	return nil, fmt.Errorf("template %q: %w", id, ErrNotFound)
}

// UseTemplate creates a new workflow from a template, named name (default: the template's).
func (s *Service) UseTemplate(ctx context.Context, id, name string) (*Workflow, error) {
	t, err := s.Template(id)
	if err != nil {
		return nil, err
	}
	if name != "" {
		t.def.Name = name
	}
	return s.createValidated(ctx, t.def)
}

// InstallTemplates creates and publishes every template whose name is not taken yet, as
// published by by. A workflow that already has a template's name is left as it is, so
// running it again changes nothing. It returns the workflows it created.
func (s *Service) InstallTemplates(ctx context.Context, by auth.Principal) ([]*Workflow, error) {
	all, err := s.Templates()
	if err != nil {
		return nil, err
	}
	var out []*Workflow
	for _, t := range all {
		_, err := s.store.GetWorkflow(ctx, t.Name)
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		w, err := s.create(ctx, t.def)
		if err != nil {
			return nil, fmt.Errorf("installing template %s: %w", t.ID, err)
		}
		if _, _, err := s.Publish(ctx, w.ID, by); err != nil {
			return nil, fmt.Errorf("publishing template %s: %w", t.ID, err)
		}
		out = append(out, w)
	}
	return out, nil
}
