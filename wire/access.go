package wire

import (
	"strings"
	"time"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/oauth"
)

// Token is an API token as listed: never its secret nor its hash.
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes" jsonschema:"description=admin | workflows:write | runs:write | runs:read; runs:* may end in :workflow=NAME or :tag=TAG."`
	ExpiresAt *time.Time `json:"expiresAt" jsonschema:"description=null for a token that does not expire."`
	Audience  string     `json:"audience,omitempty" jsonschema:"description=The one resource the token is valid at (/mcp for OAuth access tokens)."`
	CreatedAt time.Time  `json:"createdAt"`
}

// NewToken is the answer to a token's creation: the one time its secret is shown.
type NewToken struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Token     string     `json:"token" jsonschema:"description=The secret; shown once."`
}

// Key is one of the caller's idempotency keys (SPEC §3). The kept answer itself is never
// listed: it is replayed only by a retry of the same request by the same principal.
type Key struct {
	Key       string    `json:"key"`
	State     string    `json:"state" jsonschema:"enum=in_progress,enum=kept,enum=taken"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Status    int       `json:"status,omitempty" jsonschema:"description=The kept answer's HTTP status; absent while in progress."`
	RunID     string    `json:"runId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Grant is an OAuth grant: a client a person approved, with what it may do. Never its
// refresh token's hash.
type Grant struct {
	ID          string    `json:"id"`
	ClientID    string    `json:"clientId" jsonschema:"description=A Client ID Metadata Document URL, or the ID of a dynamically registered client."`
	ClientName  string    `json:"clientName"`
	PrincipalID string    `json:"principalId" jsonschema:"description=The token (or local sign-in) that approved the grant."`
	Principal   string    `json:"principal"`
	Scopes      []string  `json:"scopes"`
	CreatedAt   time.Time `json:"createdAt"`
	RefreshBy   time.Time `json:"refreshExpiresAt" jsonschema:"description=When the current refresh token stops working unless used."`
	Tokens      int       `json:"tokensIssued"`
}

// TokenOf is the view of a token.
func TokenOf(t *auth.Token) Token {
	return Token{ID: t.ID, Name: t.Name, Scopes: t.Scopes.Strings(), ExpiresAt: t.ExpiresAt, Audience: t.Audience, CreatedAt: t.CreatedAt}
}

// NewTokenOf is the view of a token just issued with its secret.
func NewTokenOf(t *auth.Token, secret string) NewToken {
	return NewToken{ID: t.ID, Name: t.Name, Scopes: t.Scopes.Strings(), ExpiresAt: t.ExpiresAt, Token: secret}
}

// KeyOf is the view of a key record; its state in the SPEC's words.
func KeyOf(r *idempotency.Record) Key {
	return Key{Key: r.Key, State: keyState(r.State), Method: r.Method, Path: r.Path, Status: r.Status,
		RunID: r.RunID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
}

// keyState is the SPEC's word for a record's state: in_progress, kept or taken.
func keyState(s idempotency.State) string {
	if s == idempotency.StateDone {
		return "kept"
	}
	return string(s)
}

// GrantOf is the view of a grant.
func GrantOf(g *oauth.Grant) Grant {
	return Grant{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, PrincipalID: g.PrincipalID,
		Principal: g.PrincipalName, Scopes: strings.Fields(g.Scope), CreatedAt: g.CreatedAt,
		RefreshBy: g.RefreshExpiresAt, Tokens: g.Issued}
}
