package oauth

import (
	"context"
	"errors"
	"time"
)

// Store sentinels.
var (
	// ErrNotFound means no such client, code, grant, refresh token or sign-in code.
	ErrNotFound = errors.New("not found")
	// ErrCodeUsed means an authorization code that was already exchanged; the code comes
	// back with it, its GrantID naming the grant the first exchange made. From CreateGrant,
	// it means the code the grant was exchanged for was replayed meanwhile.
	ErrCodeUsed = errors.New("authorization code already used")
	// ErrRefreshReused means a refresh token that was already rotated away; the grant comes
	// back with it so that the caller can revoke it whole.
	ErrRefreshReused = errors.New("refresh token already used")
)

// CodeRetention is how long past its expiry a used or expired authorization code (or
// sign-in code) is kept at least, so that a late replay is still recognised as a reuse.
const CodeRetention = 10 * time.Minute

// Client is a client registered with RFC 7591 dynamic registration. Clients identified by
// a Client ID Metadata Document are not stored: their document is fetched when needed,
// and kept in memory for a while (see documentTTL).
type Client struct {
	ID           string
	Name         string
	RedirectURIs []string
	GrantTypes   []string
	CreatedAt    time.Time
}

// Code is an authorization code as stored: only its SHA-256, bound to the client, the
// redirect URI, the PKCE challenge and what the person approved.
type Code struct {
	Hash          []byte
	ClientID      string
	ClientName    string
	RedirectURI   string
	Challenge     string // S256 code_challenge
	Scope         string // approved scopes, space-separated
	PrincipalID   string // who approved
	PrincipalName string
	ExpiresAt     time.Time
	// GrantID is set by the exchange that used the code.
	GrantID string
}

// Grant is one approval of a client by a principal: the scopes, the current refresh token
// (hash), and every access token issued under it, so that revoking it revokes them all.
type Grant struct {
	ID               string
	ClientID         string
	ClientName       string
	PrincipalID      string
	PrincipalName    string
	Scope            string
	CreatedAt        time.Time
	RefreshHash      []byte // the current refresh token's SHA-256
	RefreshExpiresAt time.Time
	TokenIDs         []string // the GoRunner access tokens the grant holds
	// Issued counts the access tokens issued under the grant: the code exchange's, then one
	// per refresh (RotateRefresh adds it).
	Issued int
	// Code is the SHA-256 of the authorization code exchanged for the grant, for
	// CreateGrant to check; it is not stored and reads back nil.
	Code []byte
}

// SignInCode is a one-time code `gorunner auth approve` prints, which signs a person in on
// the authorize page in place of a token: only its SHA-256 is stored.
type SignInCode struct {
	Hash          []byte
	PrincipalID   string
	PrincipalName string
	Scope         string // what signing in with it holds, space-separated
	ExpiresAt     time.Time
}

// RotateParams replaces a grant's refresh token.
type RotateParams struct {
	Old, New  []byte // SHA-256 of the presented and of the new refresh token
	ExpiresAt time.Time
	// TokenID is the access token issued with the new refresh token: it replaces the
	// grant's TokenIDs (the caller revokes the ones it replaces), so that a grant holds one
	// live access token however long it is refreshed; Grant.Issued counts it.
	TokenID string
}

// Store is what oauth needs from a backend. oauth/oauthtest is its conformance suite.
type Store interface {
	// CreateClient registers c.
	CreateClient(ctx context.Context, c *Client) error
	// ClientByID finds a registered client; none → ErrNotFound.
	ClientByID(ctx context.Context, id string) (*Client, error)
	// CountClients counts registered clients.
	CountClients(ctx context.Context) (int, error)
	// ClientsCreatedBefore lists the IDs of at most limit clients registered before t,
	// oldest first.
	ClientsCreatedBefore(ctx context.Context, t time.Time, limit int) ([]string, error)
	// DeleteClient deletes a registered client; none → ErrNotFound.
	DeleteClient(ctx context.Context, id string) error

	// CreateCode stores an authorization code. It may drop codes that expired more than
	// CodeRetention before c.ExpiresAt.
	CreateCode(ctx context.Context, c *Code) error
	// ExchangeCode marks the code with hash as used by grantID and returns it, atomically:
	// of two exchanges only one succeeds. Already used → the code and ErrCodeUsed, and the
	// code is deleted, so that the grant of the first exchange can no longer be stored (see
	// CreateGrant) and a later use is ErrNotFound; unknown → ErrNotFound. Expiry is the
	// caller's to check.
	ExchangeCode(ctx context.Context, hash []byte, grantID string) (*Code, error)

	// CreateGrant stores g with its first refresh token and access tokens. When g.Code is
	// set, it does so atomically only while that code is still marked used by g.ID:
	// replayed (deleted) meanwhile → ErrCodeUsed, nothing stored.
	CreateGrant(ctx context.Context, g *Grant) error
	// GrantByID finds a grant; none → ErrNotFound.
	GrantByID(ctx context.Context, id string) (*Grant, error)
	// GrantByToken finds the grant holding the access token with ID tokenID; none →
	// ErrNotFound.
	GrantByToken(ctx context.Context, tokenID string) (*Grant, error)
	// GrantByRefresh finds the grant of a refresh token, current or rotated away; none →
	// ErrNotFound.
	GrantByRefresh(ctx context.Context, hash []byte) (*Grant, error)
	// ListGrants lists grants oldest first: a principal's, or all when principalID is "".
	ListGrants(ctx context.Context, principalID string) ([]*Grant, error)
	// RotateRefresh atomically replaces the grant's current refresh token p.Old with p.New
	// and its TokenIDs with p.TokenID, returning the grant as changed. p.Old rotated away before →
	// the grant and ErrRefreshReused, nothing changed; unknown → ErrNotFound.
	RotateRefresh(ctx context.Context, p RotateParams) (*Grant, error)
	// DeleteGrant deletes a grant and its refresh tokens and returns it as it was (its
	// TokenIDs are the caller's to revoke); none → ErrNotFound.
	DeleteGrant(ctx context.Context, id string) (*Grant, error)

	// CreateSignInCode stores a one-time sign-in code. It may drop codes that expired
	// more than CodeRetention before c.ExpiresAt.
	CreateSignInCode(ctx context.Context, c *SignInCode) error
	// TakeSignInCode deletes the sign-in code with hash and returns it, atomically: it
	// signs in once. None → ErrNotFound. Expiry is the caller's to check.
	TakeSignInCode(ctx context.Context, hash []byte) (*SignInCode, error)
}
