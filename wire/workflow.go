package wire

import (
	"encoding/json"
	"time"

	"github.com/gorunner/gorunner/catalog"
)

// Workflow is a workflow as the API shows it: its draft, its latest version and the URL
// its webhook answers at (the token only inside that URL).
type Workflow struct {
	ID            string          `json:"id" jsonschema:"format=uuid"`
	Name          string          `json:"name"`
	Title         string          `json:"title,omitempty"`
	Description   string          `json:"description,omitempty"`
	Rev           int             `json:"rev"`
	Definition    json.RawMessage `json:"definition"`
	LatestVersion *int            `json:"latestVersion"`
	Published     bool            `json:"published"`
	WebhookURL    string          `json:"webhookUrl,omitempty" jsonschema:"description=Absent unless the token may start runs of the workflow (runs:write on it) or holds workflows:write: the address starts runs without a token."`
	CreatedAt     time.Time       `json:"createdAt"`
	UpdatedAt     time.Time       `json:"updatedAt"`
}

// Version is one published version of a workflow.
type Version struct {
	WorkflowID  string          `json:"workflowId" jsonschema:"format=uuid"`
	Version     int             `json:"version"`
	Definition  json.RawMessage `json:"definition"`
	Hash        string          `json:"hash"`
	PublishedAt time.Time       `json:"publishedAt"`
}

// Webhook is a workflow's webhook after its token was rotated: the one answer that shows
// the token on its own.
type Webhook struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// WorkflowOf is the view of a workflow whose webhook answers at webhookURL (the server
// knows its public origin, the record does not). LatestVersion is null until published.
func WorkflowOf(w *catalog.Workflow, webhookURL string) Workflow {
	v := Workflow{
		ID: w.ID, Name: w.Name, Title: w.Title, Description: w.Description, Rev: w.Rev,
		Definition: w.Definition, Published: w.Published, WebhookURL: webhookURL,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
	}
	if w.LatestVersion > 0 {
		n := w.LatestVersion
		v.LatestVersion = &n
	}
	return v
}

// VersionOf is the view of a published version.
func VersionOf(v *catalog.Version) Version {
	return Version{WorkflowID: v.WorkflowID, Version: v.Version, Definition: v.Definition, Hash: v.Hash, PublishedAt: v.PublishedAt}
}

// Connection is a named credential as the API shows it: never its secret, sealed or not.
type Connection struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Header   string `json:"header,omitempty"`   // the header name for type "header"
	Username string `json:"username,omitempty"` // for type "basic"
	// Hosts are the only hosts the secret is sent to; none: it is sent nowhere.
	Hosts     []string  `json:"hosts"`
	CreatedAt time.Time `json:"createdAt"`
}

// ConnectionOf is the view of a connection.
func ConnectionOf(c *catalog.Connection) Connection {
	return Connection{ID: c.ID, Name: c.Name, Type: c.Type, Header: c.Header, Username: c.Username,
		Hosts: c.Hosts, CreatedAt: c.CreatedAt}
}

// ConnectionsOf is the view of each connection; never nil, so that none encodes as [].
func ConnectionsOf(list []*catalog.Connection) []Connection {
	out := make([]Connection, len(list))
	for i, c := range list {
		out[i] = ConnectionOf(c)
	}
	return out
}
