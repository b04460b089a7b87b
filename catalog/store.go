package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gorunner/gorunner/auth"
)

// Sentinel errors every Store returns (wrapped or bare) so callers can branch with errors.Is.
var (
	// ErrNotFound means no such workflow, version, or connection.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique name is taken or an expected revision did not match.
	ErrConflict = errors.New("conflict")
	// ErrInvalidCursor means a list cursor was not one the store gave out.
	ErrInvalidCursor = errors.New("invalid cursor")
)

// Workflow is a workflow row: its mutable draft and where its versions stand.
type Workflow struct {
	ID            string
	Name          string
	Title         string
	Description   string
	Rev           int
	Definition    json.RawMessage // the draft, as canonical JSON
	LatestVersion int             // 0 when never published
	Published     bool
	// WebhookDigest is the lookup digest of the webhook token (keyed HMAC-SHA256,
	// base64url): what the store indexes, revealing nothing of the token. A workflow
	// stored before tokens were sealed holds its plaintext token here, and no
	// WebhookSealed, until Service.SealWebhooks upgrades it.
	WebhookDigest string
	// WebhookSealed is the webhook token sealed under the catalog's key, bound to the
	// workflow ID: Service.WebhookToken opens it to show the webhook address.
	WebhookSealed []byte
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Version is one immutable published version of a workflow.
type Version struct {
	WorkflowID  string
	Version     int
	Definition  json.RawMessage
	Hash        string
	PublishedAt time.Time
	// PublishedBy is who published the version (ID and scopes): its runs act within that
	// principal's scopes (SPEC §6). Nil for a version published before it was recorded.
	PublishedBy *auth.Principal
}

// Connection is a named credential for HTTP steps. Sealed is the secret encrypted by the
// catalog; a store never sees the plain secret.
// Clients see wire.Connection.
type Connection struct {
	ID       string
	Name     string
	Type     string
	Header   string // the header name for type "header"
	Username string // for type "basic"
	// Hosts are the only hosts the secret is sent to (runner.ParseHostPattern); none for a
	// connection made before connections had hosts, which is then sent nowhere.
	Hosts     []string
	Sealed    []byte
	CreatedAt time.Time
}

// Page asks for one page of a list, newest first by the store's ordering.
type Page struct {
	Limit  int
	Cursor string
}

// ListWorkflowsParams filters ListWorkflows.
type ListWorkflowsParams struct {
	Page
	PublishedOnly bool
}

// Store is what the catalog needs from a backend. Implementations: store/sqlitestore and
// store/redisstore; catalog/catalogtest is the conformance suite they both pass.
type Store interface {
	// CreateWorkflow inserts w (ID, Name, WebhookDigest and WebhookSealed set by the
	// caller). A live
	// workflow with the same name → ErrConflict. Bumps the catalog version.
	CreateWorkflow(ctx context.Context, w *Workflow) error
	// GetWorkflow finds a live workflow by ID or by name.
	GetWorkflow(ctx context.Context, idOrName string) (*Workflow, error)
	// GetWorkflowByWebhook finds the live workflow whose WebhookDigest is digest.
	GetWorkflowByWebhook(ctx context.Context, digest string) (*Workflow, error)
	// ListWorkflows lists live workflows ordered by name, paginated by an opaque cursor.
	ListWorkflows(ctx context.Context, p ListWorkflowsParams) ([]*Workflow, string, error)
	// UpdateDraft replaces the draft and its denormalised name/title/description, bumping
	// Rev. expectedRev > 0 must equal the current Rev, else ErrConflict. A new name taken by
	// another live workflow → ErrConflict. Bumps the catalog version.
	UpdateDraft(ctx context.Context, id string, w *Workflow, expectedRev int, now time.Time) (*Workflow, error)
	// DeleteWorkflow removes a live workflow (its versions may stay for its runs). Bumps the
	// catalog version. Unknown or already deleted → ErrNotFound.
	DeleteWorkflow(ctx context.Context, id string, now time.Time) error
	// Publish atomically makes the draft a new version, published by by, unless the latest
	// version has the same hash, in which case it returns that version (and its publisher)
	// and created=false. Marks the workflow published. Bumps the catalog version.
	Publish(ctx context.Context, workflowID, hash string, by auth.Principal, now time.Time) (v *Version, created bool, err error)
	// Unpublish marks the workflow unpublished. Bumps the catalog version.
	Unpublish(ctx context.Context, workflowID string, now time.Time) (*Workflow, error)
	// GetVersion returns one version; version 0 means the latest.
	GetVersion(ctx context.Context, workflowID string, version int) (*Version, error)
	// ListVersions lists a workflow's versions, newest first.
	ListVersions(ctx context.Context, workflowID string) ([]*Version, error)
	// RotateWebhook replaces the webhook's digest and sealed token; the old digest stops
	// resolving at once.
	RotateWebhook(ctx context.Context, workflowID, digest string, sealed []byte, now time.Time) error
	// SealWebhook upgrades a workflow stored with its plaintext webhook token: if it is
	// live, its WebhookDigest is still token and it has no WebhookSealed, they become
	// digest and sealed; else ErrNotFound. The address does not change, so neither do Rev,
	// UpdatedAt nor the catalog version.
	SealWebhook(ctx context.Context, workflowID, token, digest string, sealed []byte) error
	// CatalogVersion is a counter that moves whenever the set of tools may have changed: on
	// every create, draft update, publish, unpublish and delete, in the write's own
	// transaction or script. Resolve keeps its answers while it stands.
	CatalogVersion(ctx context.Context) (int64, error)

	// CreateConnection inserts c; a taken name → ErrConflict.
	CreateConnection(ctx context.Context, c *Connection) error
	// GetConnection finds a connection by ID or name.
	GetConnection(ctx context.Context, idOrName string) (*Connection, error)
	// ListConnections lists connections ordered by name.
	ListConnections(ctx context.Context) ([]*Connection, error)
	// DeleteConnection removes a connection; unknown → ErrNotFound.
	DeleteConnection(ctx context.Context, id string) error
}
