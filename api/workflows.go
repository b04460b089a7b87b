package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"gopkg.in/yaml.v3"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/guard"
	"github.com/gorunner/gorunner/wire"
)

// createWorkflow creates a workflow from a definition document, JSON or YAML; it serves
// both create and import, since import takes what export gives.
func (s *Server) createWorkflow(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.created(w, r)(s.deps.Catalog.Create(r.Context(), body))
}

// created returns the writer of a 201 workflow answer.
func (s *Server) created(w http.ResponseWriter, r *http.Request) func(*catalog.Workflow, error) {
	return func(wf *catalog.Workflow, err error) {
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeWorkflow(w, r, http.StatusCreated, wf)
	}
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views, next, err := boundedPage(page.Limit, func(limit int) ([]wire.Workflow, string, error) {
		page.Limit = limit
		list, next, err := s.deps.Catalog.List(r.Context(), catalog.ListWorkflowsParams{Page: page})
		list = guard.ReadableWorkflows(principalOf(r), list)
		if err != nil {
			return nil, "", err
		}
		views := make([]wire.Workflow, len(list))
		for i, wf := range list {
			if views[i], err = s.workflowView(r, wf); err != nil {
				return nil, "", err
			}
		}
		return views, next, nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody{Data: views, NextCursor: next})
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) {
	wf, err := s.deps.Catalog.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeWorkflow(w, r, http.StatusOK, wf)
}

func (s *Server) exportWorkflow(w http.ResponseWriter, r *http.Request) {
	wf, err := s.deps.Catalog.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	def, err := s.deps.Catalog.Definition(wf)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if wantsYAML(r) {
		out, err := yamlOf(def)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(out)
		return
	}
	writeJSON(w, http.StatusOK, def)
}

func (s *Server) updateWorkflow(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	doc, expectedRev, err := splitExpectedRev(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	wf, err := s.deps.Catalog.Update(r.Context(), chi.URLParam(r, "id"), doc, expectedRev)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeWorkflow(w, r, http.StatusOK, wf)
}

// splitExpectedRev takes the optional top-level expectedRev out of a JSON definition.
func splitExpectedRev(body []byte) ([]byte, int, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, 0, badRequest("", "the body must be a JSON workflow definition: "+err.Error())
	}
	raw, ok := obj["expectedRev"]
	if !ok {
		return body, 0, nil
	}
	var rev int
	if err := json.Unmarshal(raw, &rev); err != nil || rev < 1 {
		return nil, 0, badRequest("/expectedRev", "expectedRev must be a positive integer")
	}
	delete(obj, "expectedRev")
	doc, err := json.Marshal(obj)
	return doc, rev, err
}

func (s *Server) deleteWorkflow(w http.ResponseWriter, r *http.Request) {
	if err := s.deps.Catalog.Delete(r.Context(), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) duplicateWorkflow(w http.ResponseWriter, r *http.Request) {
	var body nameBody
	if err := decodeJSON(r, &body, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.created(w, r)(s.deps.Catalog.Duplicate(r.Context(), chi.URLParam(r, "id"), body.Name))
}

func (s *Server) publishWorkflow(w http.ResponseWriter, r *http.Request) {
	v, created, err := s.deps.Catalog.Publish(r.Context(), chi.URLParam(r, "id"), principalOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeData(w, status, wire.VersionOf(v))
}

func (s *Server) unpublishWorkflow(w http.ResponseWriter, r *http.Request) {
	wf, err := s.deps.Catalog.Unpublish(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeWorkflow(w, r, http.StatusOK, wf)
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) {
	page, err := pageOf(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.deps.Catalog.Versions(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]wire.Version, len(list))
	for i, v := range list {
		views[i] = wire.VersionOf(v)
	}
	writeHeld(s, w, r, page, views)
}

func (s *Server) rotateWebhook(w http.ResponseWriter, r *http.Request) {
	token, err := s.deps.Catalog.RotateWebhook(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, wire.Webhook{URL: WebhookURL(s.cfg.PublicURL, token), Token: token})
}

func wantsYAML(r *http.Request) bool {
	for _, a := range []string{"application/yaml", "application/x-yaml", "text/yaml"} {
		if bytes.Contains([]byte(r.Header.Get("Accept")), []byte(a)) {
			return true
		}
	}
	return false
}

// yamlOf writes v as YAML, keeping the field order of its JSON form.
func yamlOf(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var node yaml.Node
	if err := yaml.Unmarshal(raw, &node); err != nil {
		return nil, err
	}
	plainStyle(&node)
	return yaml.Marshal(&node)
}

// plainStyle turns JSON's flow style into YAML's block style for readability.
func plainStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Style&yaml.DoubleQuotedStyle != 0 && n.Tag == "!!str" {
		n.Style &^= yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		plainStyle(c)
	}
}
