package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/auth"
)

const tokenCols = `id, name, hash, scopes, expires_at, audience, created_at`

func scanToken(row pgx.Row) (*auth.Token, error) {
	var t auth.Token
	var scopes string
	var created, expires int64
	if err := row.Scan(&t.ID, &t.Name, &t.Hash, &scopes, &expires, &t.Audience, &created); err != nil {
		return nil, err
	}
	var err error
	if t.Scopes, err = auth.StoredScopes(scopes); err != nil {
		return nil, fmt.Errorf("token %q: %w", t.ID, err)
	}
	t.CreatedAt, t.ExpiresAt = fromNanos(created), fromNanosPtr(expires)
	return &t, nil
}

// CreateToken inserts t. A duplicate ID or hash is an error.
func (s *Store) CreateToken(ctx context.Context, t *auth.Token) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO api_tokens (`+tokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		t.ID, t.Name, t.Hash, t.Scopes.String(), nanosPtr(t.ExpiresAt), t.Audience, nanos(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("creating token %q: %w", t.Name, unreachable(ctx, err))
	}
	return nil
}

// TokenByHash finds a token by the SHA-256 of its secret; none → auth.ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (*auth.Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE hash = $1`, hash))
	if err != nil {
		return nil, fmt.Errorf("finding token: %w", mapErr(ctx, err, auth.ErrNotFound, nil))
	}
	return t, nil
}

// TokenByID finds a token by its ID; none → auth.ErrNotFound.
func (s *Store) TokenByID(ctx context.Context, id string) (*auth.Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("finding token %q: %w", id, mapErr(ctx, err, auth.ErrNotFound, nil))
	}
	return t, nil
}

// ListTokens lists tokens oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]*auth.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tokenCols+` FROM api_tokens ORDER BY created_at, id`)
	var ts []*auth.Token
	if err == nil {
		ts, err = collect(rows, scanToken)
	}
	if err != nil {
		return nil, fmt.Errorf("listing tokens: %w", unreachable(ctx, err))
	}
	return ts, nil
}

// DeleteToken revokes a token; unknown → auth.ErrNotFound.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	return s.deleteOne(ctx, `DELETE FROM api_tokens WHERE id = $1`, id, auth.ErrNotFound, "deleting token")
}

// CountTokens counts the tokens not revoked.
func (s *Store) CountTokens(ctx context.Context) (int, error) {
	return s.count(ctx, `SELECT COUNT(*) FROM api_tokens`, "counting tokens")
}

// count runs a query of one count.
func (s *Store) count(ctx context.Context, query, doing string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, query).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %w", doing, unreachable(ctx, err))
	}
	return n, nil
}
