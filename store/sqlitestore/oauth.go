package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/oauth"
)

var _ oauth.Store = (*Store)(nil)

// CreateClient registers c.
func (s *Store) CreateClient(ctx context.Context, c *oauth.Client) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("registering client: %w", err)
	}
	grants, err := json.Marshal(c.GrantTypes)
	if err != nil {
		return fmt.Errorf("registering client: %w", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.in(tx).ExecContext(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, grant_types, created_at)
			VALUES (?, ?, ?, ?, ?)`, c.ID, c.Name, uris, grants, nanos(c.CreatedAt))
		if err != nil {
			return fmt.Errorf("registering client %q: %w", c.ID, err)
		}
		return nil
	})
}

// ClientByID finds a registered client; none → oauth.ErrNotFound.
func (s *Store) ClientByID(ctx context.Context, id string) (*oauth.Client, error) {
	var c oauth.Client
	var uris, grants []byte
	var created int64
	err := s.q().QueryRowContext(ctx, `SELECT id, name, redirect_uris, grant_types, created_at FROM oauth_clients WHERE id = ?`, id).
		Scan(&c.ID, &c.Name, &uris, &grants, &created)
	if err == nil {
		err = errors.Join(json.Unmarshal(uris, &c.RedirectURIs), json.Unmarshal(grants, &c.GrantTypes))
	}
	if err != nil {
		return nil, fmt.Errorf("finding client %q: %w", id, mapErr(err, oauth.ErrNotFound, nil))
	}
	c.CreatedAt = fromNanos(created)
	return &c, nil
}

// CountClients counts registered clients.
func (s *Store) CountClients(ctx context.Context) (int, error) {
	var n int
	if err := s.q().QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_clients`).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting clients: %w", unavailable(err))
	}
	return n, nil
}

// ClientsCreatedBefore lists the IDs of at most limit clients registered before t, oldest
// first.
func (s *Store) ClientsCreatedBefore(ctx context.Context, t time.Time, limit int) ([]string, error) {
	rows, err := s.q().QueryContext(ctx, `SELECT id FROM oauth_clients WHERE created_at < ?
		ORDER BY created_at, id LIMIT ?`, nanos(t), limit)
	if err == nil {
		var ids []string
		if ids, err = collect(rows, func(row scanner) (id string, err error) { return id, row.Scan(&id) }); err == nil {
			return ids, nil
		}
	}
	return nil, fmt.Errorf("listing old clients: %w", unavailable(err))
}

// DeleteClient deletes a registered client; none → oauth.ErrNotFound.
func (s *Store) DeleteClient(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(s.in(tx).ExecContext(ctx, `DELETE FROM oauth_clients WHERE id = ?`, id))
		if err == nil && n == 0 {
			err = oauth.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("deleting client %q: %w", id, err)
		}
		return nil
	})
}

const codeCols = `hash, client_id, client_name, redirect_uri, challenge, scope, principal_id, principal_name, expires_at, grant_id`

// CreateCode stores an authorization code and drops those expired more than
// oauth.CodeRetention before it.
func (s *Store) CreateCode(ctx context.Context, c *oauth.Code) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := s.in(tx).ExecContext(ctx, `DELETE FROM oauth_codes WHERE expires_at < ?`,
			nanos(c.ExpiresAt.Add(-oauth.CodeRetention))); err != nil {
			return fmt.Errorf("dropping expired codes: %w", err)
		}
		_, err := s.in(tx).ExecContext(ctx, `INSERT INTO oauth_codes (`+codeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.Hash, c.ClientID, c.ClientName, c.RedirectURI, c.Challenge, c.Scope, c.PrincipalID, c.PrincipalName,
			nanos(c.ExpiresAt), c.GrantID)
		if err != nil {
			return fmt.Errorf("storing code: %w", err)
		}
		return nil
	})
}

// ExchangeCode marks a code as used by grantID and returns it; used before →
// oauth.ErrCodeUsed with the code, which is deleted.
func (s *Store) ExchangeCode(ctx context.Context, hash []byte, grantID string) (*oauth.Code, error) {
	var c oauth.Code
	used := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		var expires int64
		err := s.in(tx).QueryRowContext(ctx, `SELECT `+codeCols+` FROM oauth_codes WHERE hash = ?`, hash).Scan(
			&c.Hash, &c.ClientID, &c.ClientName, &c.RedirectURI, &c.Challenge, &c.Scope, &c.PrincipalID,
			&c.PrincipalName, &expires, &c.GrantID)
		if err != nil {
			return mapErr(err, oauth.ErrNotFound, nil)
		}
		c.ExpiresAt = fromNanos(expires)
		if used = c.GrantID != ""; used {
			// Deleted, not returned as an error: that would roll the deletion back.
			_, err = s.in(tx).ExecContext(ctx, `DELETE FROM oauth_codes WHERE hash = ?`, hash)
			return err
		}
		c.GrantID = grantID
		_, err = s.in(tx).ExecContext(ctx, `UPDATE oauth_codes SET grant_id = ? WHERE hash = ?`, grantID, hash)
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("exchanging code: %w", err)
	case used:
		return &c, fmt.Errorf("exchanging code: %w", oauth.ErrCodeUsed)
	}
	return &c, nil
}

// CreateGrant stores g with its refresh token and access tokens; when g.Code is set, only
// while that code is used by g (oauth.ErrCodeUsed otherwise).
func (s *Store) CreateGrant(ctx context.Context, g *oauth.Grant) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if g.Code != nil {
			var usedBy string
			err := s.in(tx).QueryRowContext(ctx, `SELECT grant_id FROM oauth_codes WHERE hash = ?`, g.Code).Scan(&usedBy)
			if err = mapErr(err, oauth.ErrCodeUsed, nil); err == nil && usedBy != g.ID {
				err = oauth.ErrCodeUsed
			}
			if err != nil {
				return fmt.Errorf("storing grant %q: %w", g.ID, err)
			}
		}
		_, err := s.in(tx).ExecContext(ctx, `INSERT INTO oauth_grants (id, client_id, client_name, principal_id,
			principal_name, scope, created_at, refresh_hash, refresh_expires_at, tokens_issued) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			g.ID, g.ClientID, g.ClientName, g.PrincipalID, g.PrincipalName, g.Scope, nanos(g.CreatedAt),
			g.RefreshHash, nanos(g.RefreshExpiresAt), g.Issued)
		if err == nil {
			_, err = s.in(tx).ExecContext(ctx, `INSERT INTO oauth_refresh_tokens (hash, grant_id) VALUES (?, ?)`, g.RefreshHash, g.ID)
		}
		for _, id := range g.TokenIDs {
			if err == nil {
				err = addGrantToken(ctx, s.in(tx), g.ID, id)
			}
		}
		if err != nil {
			return fmt.Errorf("storing grant %q: %w", g.ID, err)
		}
		return nil
	})
}

func addGrantToken(ctx context.Context, q querier, grantID, tokenID string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO oauth_grant_tokens (grant_id, seq, token_id)
		VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM oauth_grant_tokens WHERE grant_id = ?), ?)`,
		grantID, grantID, tokenID)
	return err
}

const grantCols = `id, client_id, client_name, principal_id, principal_name, scope, created_at, refresh_hash, refresh_expires_at, tokens_issued`

// grantWhere reads the grants a WHERE clause selects, with their token IDs, oldest first.
func grantWhere(ctx context.Context, q querier, where string, args ...any) ([]*oauth.Grant, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+grantCols+` FROM oauth_grants WHERE `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, err
	}
	gs, err := collect(rows, func(row scanner) (*oauth.Grant, error) {
		var g oauth.Grant
		var created, refreshExp int64
		err := row.Scan(&g.ID, &g.ClientID, &g.ClientName, &g.PrincipalID, &g.PrincipalName, &g.Scope,
			&created, &g.RefreshHash, &refreshExp, &g.Issued)
		g.CreatedAt, g.RefreshExpiresAt = fromNanos(created), fromNanos(refreshExp)
		return &g, err
	})
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		rows, err := q.QueryContext(ctx, `SELECT token_id FROM oauth_grant_tokens WHERE grant_id = ? ORDER BY seq`, g.ID)
		if err != nil {
			return nil, err
		}
		if g.TokenIDs, err = collect(rows, func(row scanner) (id string, err error) { return id, row.Scan(&id) }); err != nil {
			return nil, err
		}
	}
	return gs, nil
}

// grantOne reads the one grant a WHERE clause selects; none → oauth.ErrNotFound.
func grantOne(ctx context.Context, q querier, where string, args ...any) (*oauth.Grant, error) {
	gs, err := grantWhere(ctx, q, where, args...)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, oauth.ErrNotFound
	}
	return gs[0], nil
}

const byRefresh = `id = (SELECT grant_id FROM oauth_refresh_tokens WHERE hash = ?)`

// GrantByID finds a grant; none → oauth.ErrNotFound.
func (s *Store) GrantByID(ctx context.Context, id string) (*oauth.Grant, error) {
	g, err := grantOne(ctx, s.q(), `id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("finding grant %q: %w", id, unavailable(err))
	}
	return g, nil
}

// GrantByToken finds the grant holding an access token; none → oauth.ErrNotFound.
func (s *Store) GrantByToken(ctx context.Context, tokenID string) (*oauth.Grant, error) {
	g, err := grantOne(ctx, s.q(), `id = (SELECT grant_id FROM oauth_grant_tokens WHERE token_id = ?)`, tokenID)
	if err != nil {
		return nil, fmt.Errorf("finding grant by access token %q: %w", tokenID, unavailable(err))
	}
	return g, nil
}

// GrantByRefresh finds the grant of a refresh token, current or rotated away.
func (s *Store) GrantByRefresh(ctx context.Context, hash []byte) (*oauth.Grant, error) {
	g, err := grantOne(ctx, s.q(), byRefresh, hash)
	if err != nil {
		return nil, fmt.Errorf("finding grant by refresh token: %w", unavailable(err))
	}
	return g, nil
}

// ListGrants lists a principal's grants (all when principalID is ""), oldest first.
func (s *Store) ListGrants(ctx context.Context, principalID string) ([]*oauth.Grant, error) {
	gs, err := grantWhere(ctx, s.q(), `? = '' OR principal_id = ?`, principalID, principalID)
	if err != nil {
		return nil, fmt.Errorf("listing grants: %w", unavailable(err))
	}
	return gs, nil
}

// RotateRefresh replaces the grant's current refresh token; a rotated-away one →
// oauth.ErrRefreshReused with the grant.
func (s *Store) RotateRefresh(ctx context.Context, p oauth.RotateParams) (*oauth.Grant, error) {
	var g *oauth.Grant
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		if g, err = grantOne(ctx, s.in(tx), byRefresh, p.Old); err != nil {
			return err
		}
		if string(g.RefreshHash) != string(p.Old) {
			return oauth.ErrRefreshReused
		}
		if _, err := s.in(tx).ExecContext(ctx, `UPDATE oauth_grants SET refresh_hash = ?, refresh_expires_at = ?, tokens_issued = tokens_issued + 1 WHERE id = ?`,
			p.New, nanos(p.ExpiresAt), g.ID); err != nil {
			return err
		}
		if _, err := s.in(tx).ExecContext(ctx, `INSERT INTO oauth_refresh_tokens (hash, grant_id) VALUES (?, ?)`, p.New, g.ID); err != nil {
			return err
		}
		if _, err := s.in(tx).ExecContext(ctx, `DELETE FROM oauth_grant_tokens WHERE grant_id = ?`, g.ID); err != nil {
			return err
		}
		if err := addGrantToken(ctx, s.in(tx), g.ID, p.TokenID); err != nil {
			return err
		}
		g.RefreshHash, g.RefreshExpiresAt, g.TokenIDs = p.New, p.ExpiresAt, []string{p.TokenID}
		g.Issued++
		return nil
	})
	switch {
	case errors.Is(err, oauth.ErrRefreshReused):
		return g, fmt.Errorf("rotating refresh token: %w", err)
	case err != nil:
		return nil, fmt.Errorf("rotating refresh token: %w", err)
	}
	return g, nil
}

// DeleteGrant deletes a grant with its refresh tokens and returns it as it was.
func (s *Store) DeleteGrant(ctx context.Context, id string) (*oauth.Grant, error) {
	var g *oauth.Grant
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		if g, err = grantOne(ctx, s.in(tx), `id = ?`, id); err != nil {
			return err
		}
		for _, table := range []string{"oauth_refresh_tokens", "oauth_grant_tokens"} {
			if _, err := s.in(tx).ExecContext(ctx, `DELETE FROM `+table+` WHERE grant_id = ?`, id); err != nil {
				return err
			}
		}
		_, err = s.in(tx).ExecContext(ctx, `DELETE FROM oauth_grants WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("deleting grant %q: %w", id, err)
	}
	return g, nil
}

// CreateSignInCode stores a one-time sign-in code and drops those expired more than
// oauth.CodeRetention before it.
func (s *Store) CreateSignInCode(ctx context.Context, c *oauth.SignInCode) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := s.in(tx).ExecContext(ctx, `DELETE FROM oauth_signin_codes WHERE expires_at < ?`,
			nanos(c.ExpiresAt.Add(-oauth.CodeRetention))); err != nil {
			return fmt.Errorf("dropping expired sign-in codes: %w", err)
		}
		_, err := s.in(tx).ExecContext(ctx, `INSERT INTO oauth_signin_codes (hash, principal_id, principal_name, scope, expires_at)
			VALUES (?, ?, ?, ?, ?)`, c.Hash, c.PrincipalID, c.PrincipalName, c.Scope, nanos(c.ExpiresAt))
		if err != nil {
			return fmt.Errorf("storing sign-in code: %w", err)
		}
		return nil
	})
}

// TakeSignInCode deletes a sign-in code and returns it; none → oauth.ErrNotFound.
func (s *Store) TakeSignInCode(ctx context.Context, hash []byte) (*oauth.SignInCode, error) {
	var c oauth.SignInCode
	err := s.write(ctx, func(tx *sql.Tx) error {
		var expires int64
		err := s.in(tx).QueryRowContext(ctx, `DELETE FROM oauth_signin_codes WHERE hash = ?
			RETURNING hash, principal_id, principal_name, scope, expires_at`, hash).
			Scan(&c.Hash, &c.PrincipalID, &c.PrincipalName, &c.Scope, &expires)
		c.ExpiresAt = fromNanos(expires)
		return mapErr(err, oauth.ErrNotFound, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("taking sign-in code: %w", err)
	}
	return &c, nil
}
