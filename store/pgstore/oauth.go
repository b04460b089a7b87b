package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
	return s.write(ctx, func(q querier) error {
		_, err := q.Exec(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, grant_types, created_at)
			VALUES ($1, $2, $3, $4, $5)`, c.ID, c.Name, string(uris), string(grants), nanos(c.CreatedAt))
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
	err := s.pool.QueryRow(ctx, `SELECT id, name, redirect_uris, grant_types, created_at FROM oauth_clients WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &uris, &grants, &created)
	if err == nil {
		err = errors.Join(json.Unmarshal(uris, &c.RedirectURIs), json.Unmarshal(grants, &c.GrantTypes))
	}
	if err != nil {
		return nil, fmt.Errorf("finding client %q: %w", id, mapErr(ctx, err, oauth.ErrNotFound, nil))
	}
	c.CreatedAt = fromNanos(created)
	return &c, nil
}

// CountClients counts registered clients.
func (s *Store) CountClients(ctx context.Context) (int, error) {
	return s.count(ctx, `SELECT COUNT(*) FROM oauth_clients`, "counting clients")
}

// ClientsCreatedBefore lists the IDs of at most limit clients registered before t, oldest
// first.
func (s *Store) ClientsCreatedBefore(ctx context.Context, t time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM oauth_clients WHERE created_at < $1
		ORDER BY created_at, id LIMIT $2`, nanos(t), limit)
	if err == nil {
		var ids []string
		if ids, err = collect(rows, func(row pgx.Row) (id string, err error) { return id, row.Scan(&id) }); err == nil {
			return ids, nil
		}
	}
	return nil, fmt.Errorf("listing old clients: %w", unreachable(ctx, err))
}

// DeleteClient deletes a registered client; none → oauth.ErrNotFound.
func (s *Store) DeleteClient(ctx context.Context, id string) error {
	return s.write(ctx, func(q querier) error {
		n, err := affected(q.Exec(ctx, `DELETE FROM oauth_clients WHERE id = $1`, id))
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
	return s.write(ctx, func(q querier) error {
		if _, err := q.Exec(ctx, `DELETE FROM oauth_codes WHERE expires_at < $1`,
			nanos(c.ExpiresAt.Add(-oauth.CodeRetention))); err != nil {
			return fmt.Errorf("dropping expired codes: %w", err)
		}
		_, err := q.Exec(ctx, `INSERT INTO oauth_codes (`+codeCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			c.Hash, c.ClientID, c.ClientName, c.RedirectURI, c.Challenge, c.Scope, c.PrincipalID, c.PrincipalName,
			nanos(c.ExpiresAt), c.GrantID)
		if err != nil {
			return fmt.Errorf("storing code: %w", err)
		}
		return nil
	})
}

// ExchangeCode marks a code as used by grantID and returns it; used before →
// oauth.ErrCodeUsed with the code, which is deleted. The code's row is locked while it is
// read, as CreateGrant locks it, so that a replay and the grant of the first exchange
// never miss each other.
func (s *Store) ExchangeCode(ctx context.Context, hash []byte, grantID string) (*oauth.Code, error) {
	var c oauth.Code
	used := false
	err := s.write(ctx, func(q querier) error {
		var expires int64
		err := q.QueryRow(ctx, `SELECT `+codeCols+` FROM oauth_codes WHERE hash = $1 FOR UPDATE`, hash).Scan(
			&c.Hash, &c.ClientID, &c.ClientName, &c.RedirectURI, &c.Challenge, &c.Scope, &c.PrincipalID,
			&c.PrincipalName, &expires, &c.GrantID)
		if err != nil {
			return mapErr(ctx, err, oauth.ErrNotFound, nil)
		}
		c.ExpiresAt = fromNanos(expires)
		if used = c.GrantID != ""; used {
			// Deleted, not returned as an error: that would roll the deletion back.
			_, err = q.Exec(ctx, `DELETE FROM oauth_codes WHERE hash = $1`, hash)
			return err
		}
		c.GrantID = grantID
		_, err = q.Exec(ctx, `UPDATE oauth_codes SET grant_id = $1 WHERE hash = $2`, grantID, hash)
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
	return s.write(ctx, func(q querier) error {
		if g.Code != nil {
			var usedBy string
			err := q.QueryRow(ctx, `SELECT grant_id FROM oauth_codes WHERE hash = $1 FOR UPDATE`, g.Code).Scan(&usedBy)
			if err = mapErr(ctx, err, oauth.ErrCodeUsed, nil); err == nil && usedBy != g.ID {
				err = oauth.ErrCodeUsed
			}
			if err != nil {
				return fmt.Errorf("storing grant %q: %w", g.ID, err)
			}
		}
		_, err := q.Exec(ctx, `INSERT INTO oauth_grants (id, client_id, client_name, principal_id,
			principal_name, scope, created_at, refresh_hash, refresh_expires_at, tokens_issued) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			g.ID, g.ClientID, g.ClientName, g.PrincipalID, g.PrincipalName, g.Scope, nanos(g.CreatedAt),
			g.RefreshHash, nanos(g.RefreshExpiresAt), g.Issued)
		if err == nil {
			_, err = q.Exec(ctx, `INSERT INTO oauth_refresh_tokens (hash, grant_id) VALUES ($1, $2)`, g.RefreshHash, g.ID)
		}
		for _, id := range g.TokenIDs {
			if err == nil {
				err = addGrantToken(ctx, q, g.ID, id)
			}
		}
		if err != nil {
			return fmt.Errorf("storing grant %q: %w", g.ID, err)
		}
		return nil
	})
}

func addGrantToken(ctx context.Context, q querier, grantID, tokenID string) error {
	_, err := q.Exec(ctx, `INSERT INTO oauth_grant_tokens (grant_id, seq, token_id)
		VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM oauth_grant_tokens WHERE grant_id = $2), $3)`,
		grantID, grantID, tokenID)
	return err
}

const grantCols = `id, client_id, client_name, principal_id, principal_name, scope, created_at, refresh_hash, refresh_expires_at, tokens_issued`

// grantWhere reads the grants a WHERE clause selects, with their token IDs, oldest first.
func grantWhere(ctx context.Context, q querier, where string, args ...any) ([]*oauth.Grant, error) {
	rows, err := q.Query(ctx, `SELECT `+grantCols+` FROM oauth_grants WHERE `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, err
	}
	gs, err := collect(rows, func(row pgx.Row) (*oauth.Grant, error) {
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
		rows, err := q.Query(ctx, `SELECT token_id FROM oauth_grant_tokens WHERE grant_id = $1 ORDER BY seq`, g.ID)
		if err != nil {
			return nil, err
		}
		if g.TokenIDs, err = collect(rows, func(row pgx.Row) (id string, err error) { return id, row.Scan(&id) }); err != nil {
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

const byRefresh = `id = (SELECT grant_id FROM oauth_refresh_tokens WHERE hash = $1)`

// GrantByID finds a grant; none → oauth.ErrNotFound.
func (s *Store) GrantByID(ctx context.Context, id string) (*oauth.Grant, error) {
	g, err := grantOne(ctx, s.pool, `id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("finding grant %q: %w", id, unreachable(ctx, err))
	}
	return g, nil
}

// GrantByToken finds the grant holding an access token; none → oauth.ErrNotFound.
func (s *Store) GrantByToken(ctx context.Context, tokenID string) (*oauth.Grant, error) {
	g, err := grantOne(ctx, s.pool, `id = (SELECT grant_id FROM oauth_grant_tokens WHERE token_id = $1)`, tokenID)
	if err != nil {
		return nil, fmt.Errorf("finding grant by access token %q: %w", tokenID, unreachable(ctx, err))
	}
	return g, nil
}

// GrantByRefresh finds the grant of a refresh token, current or rotated away.
func (s *Store) GrantByRefresh(ctx context.Context, hash []byte) (*oauth.Grant, error) {
	g, err := grantOne(ctx, s.pool, byRefresh, hash)
	if err != nil {
		return nil, fmt.Errorf("finding grant by refresh token: %w", unreachable(ctx, err))
	}
	return g, nil
}

// ListGrants lists a principal's grants (all when principalID is ""), oldest first.
func (s *Store) ListGrants(ctx context.Context, principalID string) ([]*oauth.Grant, error) {
	gs, err := grantWhere(ctx, s.pool, `$1 = '' OR principal_id = $2`, principalID, principalID)
	if err != nil {
		return nil, fmt.Errorf("listing grants: %w", unreachable(ctx, err))
	}
	return gs, nil
}

// RotateRefresh replaces the grant's current refresh token; a rotated-away one →
// oauth.ErrRefreshReused with the grant.
func (s *Store) RotateRefresh(ctx context.Context, p oauth.RotateParams) (*oauth.Grant, error) {
	var g *oauth.Grant
	err := s.write(ctx, func(q querier) error {
		var err error
		// The grant's row is locked first, so that two rotations of one token are one
		// rotation and one reuse.
		if _, err = q.Exec(ctx, `SELECT 1 FROM oauth_grants WHERE `+byRefresh+` FOR UPDATE`, p.Old); err != nil {
			return err
		}
		if g, err = grantOne(ctx, q, byRefresh, p.Old); err != nil {
			return err
		}
		if string(g.RefreshHash) != string(p.Old) {
			return oauth.ErrRefreshReused
		}
		if _, err := q.Exec(ctx, `UPDATE oauth_grants SET refresh_hash = $1, refresh_expires_at = $2, tokens_issued = tokens_issued + 1 WHERE id = $3`,
			p.New, nanos(p.ExpiresAt), g.ID); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `INSERT INTO oauth_refresh_tokens (hash, grant_id) VALUES ($1, $2)`, p.New, g.ID); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM oauth_grant_tokens WHERE grant_id = $1`, g.ID); err != nil {
			return err
		}
		if err := addGrantToken(ctx, q, g.ID, p.TokenID); err != nil {
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
	err := s.write(ctx, func(q querier) error {
		// Locked first, as RotateRefresh locks it: the grant returned is the one deleted.
		_, err := q.Exec(ctx, `SELECT 1 FROM oauth_grants WHERE id = $1 FOR UPDATE`, id)
		if err != nil {
			return err
		}
		if g, err = grantOne(ctx, q, `id = $1`, id); err != nil {
			return err
		}
		for _, table := range []string{"oauth_refresh_tokens", "oauth_grant_tokens"} {
			if _, err := q.Exec(ctx, `DELETE FROM `+table+` WHERE grant_id = $1`, id); err != nil {
				return err
			}
		}
		_, err = q.Exec(ctx, `DELETE FROM oauth_grants WHERE id = $1`, id)
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
	return s.write(ctx, func(q querier) error {
		if _, err := q.Exec(ctx, `DELETE FROM oauth_signin_codes WHERE expires_at < $1`,
			nanos(c.ExpiresAt.Add(-oauth.CodeRetention))); err != nil {
			return fmt.Errorf("dropping expired sign-in codes: %w", err)
		}
		_, err := q.Exec(ctx, `INSERT INTO oauth_signin_codes (hash, principal_id, principal_name, scope, expires_at)
			VALUES ($1, $2, $3, $4, $5)`, c.Hash, c.PrincipalID, c.PrincipalName, c.Scope, nanos(c.ExpiresAt))
		if err != nil {
			return fmt.Errorf("storing sign-in code: %w", err)
		}
		return nil
	})
}

// TakeSignInCode deletes a sign-in code and returns it; none → oauth.ErrNotFound.
func (s *Store) TakeSignInCode(ctx context.Context, hash []byte) (*oauth.SignInCode, error) {
	var c oauth.SignInCode
	err := s.write(ctx, func(q querier) error {
		var expires int64
		err := q.QueryRow(ctx, `DELETE FROM oauth_signin_codes WHERE hash = $1
			RETURNING hash, principal_id, principal_name, scope, expires_at`, hash).
			Scan(&c.Hash, &c.PrincipalID, &c.PrincipalName, &c.Scope, &expires)
		c.ExpiresAt = fromNanos(expires)
		return mapErr(ctx, err, oauth.ErrNotFound, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("taking sign-in code: %w", err)
	}
	return &c, nil
}
