package auth

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound means no such token.
var ErrNotFound = errors.New("not found")

// Token is an API token as stored: never the secret, only its SHA-256 hash. Clients see
// wire.Token.
type Token struct {
	ID     string
	Name   string
	Hash   []byte // SHA-256 of the secret
	Scopes Scopes
	// ExpiresAt is nil for a token that does not expire.
	ExpiresAt *time.Time
	// Audience is empty, or the one resource the token is valid at (AudienceMCP).
	Audience  string
	CreatedAt time.Time
}

// Expired reports whether the token has expired at now.
func (t *Token) Expired(now time.Time) bool { return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt) }

// Store is what auth needs from a backend. auth/authtest is its conformance suite.
type Store interface {
	// CreateToken inserts t with its scopes, expiry and audience. A token stored before
	// scopes existed reads back with AdminScopes.
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash finds a token by the SHA-256 of its secret; none → ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (*Token, error)
	// TokenByID finds a token by its ID; none → ErrNotFound.
	TokenByID(ctx context.Context, id string) (*Token, error)
	// ListTokens lists tokens oldest first.
	ListTokens(ctx context.Context) ([]*Token, error)
	// DeleteToken revokes a token; unknown → ErrNotFound.
	DeleteToken(ctx context.Context, id string) error
	// CountTokens counts live tokens.
	CountTokens(ctx context.Context) (int, error)
}
