package auth

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound means no such token.
var ErrNotFound = errors.New("not found")

// Token is an API token as stored: never the secret, only its SHA-256 hash.
type Token struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Hash      []byte    `json:"-"` // SHA-256 of the secret
	CreatedAt time.Time `json:"createdAt"`
}

// Store is what auth needs from a backend. auth/authtest is its conformance suite.
type Store interface {
	// CreateToken inserts t.
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash finds a token by the SHA-256 of its secret; none → ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (*Token, error)
	// ListTokens lists tokens oldest first.
	ListTokens(ctx context.Context) ([]*Token, error)
	// DeleteToken revokes a token; unknown → ErrNotFound.
	DeleteToken(ctx context.Context, id string) error
	// CountTokens counts live tokens.
	CountTokens(ctx context.Context) (int, error)
}
