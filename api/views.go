package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/runner"
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

type workflowView struct {
	ID            string          `json:"id" jsonschema:"format=uuid"`
	Name          string          `json:"name"`
	Title         string          `json:"title,omitempty"`
	Description   string          `json:"description,omitempty"`
	Rev           int             `json:"rev"`
	Definition    json.RawMessage `json:"definition"`
	LatestVersion *int            `json:"latestVersion"`
	Published     bool            `json:"published"`
	WebhookURL    string          `json:"webhookUrl"`
	CreatedAt     time.Time       `json:"createdAt"`
	UpdatedAt     time.Time       `json:"updatedAt"`
}

type versionView struct {
	WorkflowID  string          `json:"workflowId" jsonschema:"format=uuid"`
	Version     int             `json:"version"`
	Definition  json.RawMessage `json:"definition"`
	Hash        string          `json:"hash"`
	PublishedAt time.Time       `json:"publishedAt"`
}

type webhookView struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

type runView = runner.Run

type hookView = runner.Hook

type resumeView struct {
	Token string `json:"token"`
	RunID string `json:"runId"`
}

type connectionView = catalog.Connection

type connectionBody = catalog.ConnectionParams

type templateView = catalog.Template

type tokenView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes" jsonschema:"description=admin | workflows:write | runs:write | runs:read; runs:* may end in :workflow=NAME or :tag=TAG."`
	ExpiresAt *time.Time `json:"expiresAt" jsonschema:"description=null for a token that does not expire."`
	Audience  string     `json:"audience,omitempty" jsonschema:"description=The one resource the token is valid at (/mcp for OAuth access tokens)."`
	CreatedAt time.Time  `json:"createdAt"`
}

func newTokenViewOf(t *auth.Token) tokenView {
	return tokenView{ID: t.ID, Name: t.Name, Scopes: t.Scopes.Strings(), ExpiresAt: t.ExpiresAt, Audience: t.Audience, CreatedAt: t.CreatedAt}
}

type newTokenView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Token     string     `json:"token" jsonschema:"description=The secret; shown once."`
}

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

// PublicOrigin checks a public URL (an absolute http or https URL with a host, no query)
// and returns it without a trailing slash.
func PublicOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("public URL %q: want an absolute http(s) URL such as https://runner.example", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func (s *Server) webhookURL(token string) string {
	return s.cfg.PublicURL + "/webhooks/" + token
}

func (s *Server) workflowView(w *catalog.Workflow) workflowView {
	v := workflowView{
		ID: w.ID, Name: w.Name, Title: w.Title, Description: w.Description, Rev: w.Rev,
		Definition: w.Definition, Published: w.Published, WebhookURL: s.webhookURL(w.WebhookToken),
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
	}
	if w.LatestVersion > 0 {
		n := w.LatestVersion
		v.LatestVersion = &n
	}
	return v
}

func versionViewOf(v *catalog.Version) versionView {
	return versionView{WorkflowID: v.WorkflowID, Version: v.Version, Definition: v.Definition, Hash: v.Hash, PublishedAt: v.PublishedAt}
}
