package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/guard"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/wire"
)

// definitionDoc is a workflow definition document, described by /schemas/workflow.json.
type definitionDoc struct{}

// JSONSchema points at the definition schema served beside the API.
func (definitionDoc) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Ref: "/schemas/workflow.json", Description: "A workflow definition (JSON, or YAML where the call says so)."}
}

// anyObject is a free JSON object: a run input.
type anyObject struct{}

// JSONSchema describes any JSON object.
func (anyObject) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: "Any JSON object, checked against the workflow's input schema."}
}

// anyValue is any JSON value: a hook payload.
type anyValue struct{}

// JSONSchema describes any JSON value.
func (anyValue) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Description: "Any JSON value."}
}

type connectionBody = catalog.ConnectionParams

type templateView = catalog.Template

type createTokenBody struct {
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes,omitempty" jsonschema:"description=Default: the creator's own scopes. A token cannot be given scopes its creator does not hold."`
	ExpiresIn string   `json:"expiresIn,omitempty" jsonschema:"description=Go duration (720h); default: never expires."`
}

type nameBody struct {
	Name string `json:"name,omitempty"`
}

type rerunManyBody struct {
	RunIDs   []string      `json:"runIds,omitempty"`
	Workflow string        `json:"workflow,omitempty"`
	Status   runner.Status `json:"status,omitempty"`
}

// PublicOrigin checks a public URL (an absolute http or https URL with a host, no user
// info, query or fragment) and returns it without a trailing slash. It refuses what
// oauth.New refuses, so that serve can check --public-url once, before it listens.
func PublicOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("public URL %q: want an absolute http(s) URL such as https://runner.example", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// WebhookURL is the address the webhook with token answers at under the public origin.
func WebhookURL(origin, token string) string {
	return origin + "/webhooks/" + token
}

// workflowView is w as r's principal sees it: the webhook address only if it may use it,
// its token unsealed only then.
func (s *Server) workflowView(r *http.Request, w *catalog.Workflow) (wire.Workflow, error) {
	hook := ""
	if guard.WebhookVisible(principalOf(r), w) {
		token, err := s.deps.Catalog.WebhookToken(w)
		if err != nil {
			return wire.Workflow{}, err
		}
		hook = WebhookURL(s.cfg.PublicURL, token)
	}
	return wire.WorkflowOf(w, hook), nil
}

// writeWorkflow answers with status and the view of w.
func (s *Server) writeWorkflow(w http.ResponseWriter, r *http.Request, status int, wf *catalog.Workflow) {
	view, err := s.workflowView(r, wf)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeData(w, status, view)
}
