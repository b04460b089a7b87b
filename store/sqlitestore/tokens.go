package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gorunner/gorunner/auth"
)

const tokenCols = `id, name, hash, scopes, expires_at, audience, created_at`

func scanToken(row scanner) (*auth.Token, error) {
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
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.in(tx).ExecContext(ctx, `INSERT INTO api_tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Name, t.Hash, t.Scopes.String(), nanosPtr(t.ExpiresAt), t.Audience, nanos(t.CreatedAt))
		if err != nil {
			return fmt.Errorf("creating token %q: %w", t.Name, err)
		}
		return nil
	})
}

// TokenByHash finds a token by the SHA-256 of its secret; none → auth.ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (*auth.Token, error) {
	t, err := scanToken(s.q().QueryRowContext(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE hash = ?`, hash))
	if err != nil {
		return nil, fmt.Errorf("finding token: %w", mapErr(err, auth.ErrNotFound, nil))
	}
	return t, nil
}

// TokenByID finds a token by its ID; none → auth.ErrNotFound.
func (s *Store) TokenByID(ctx context.Context, id string) (*auth.Token, error) {
	t, err := scanToken(s.q().QueryRowContext(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("finding token %q: %w", id, mapErr(err, auth.ErrNotFound, nil))
	}
	return t, nil
}

// ListTokens lists tokens oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]*auth.Token, error) {
	rows, err := s.q().QueryContext(ctx, `SELECT `+tokenCols+` FROM api_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("listing tokens: %w", unavailable(err))
	}
	ts, err := collect(rows, scanToken)
	if err != nil {
		return nil, fmt.Errorf("listing tokens: %w", unavailable(err))
	}
	return ts, nil
}

// DeleteToken revokes a token; unknown → auth.ErrNotFound.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(s.in(tx).ExecContext(ctx, `DELETE FROM api_tokens WHERE id = ?`, id))
		if err == nil && n == 0 {
			err = auth.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("deleting token %q: %w", id, err)
		}
		return nil
	})
}

// CountTokens counts the tokens not revoked.
func (s *Store) CountTokens(ctx context.Context) (int, error) {
	var n int
	if err := s.q().QueryRowContext(ctx, `SELECT COUNT(*) FROM api_tokens`).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting tokens: %w", unavailable(err))
	}
	return n, nil
}
