package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/auth"
)

// errDuplicate is a create refused because the ID (or a unique field) is taken.
var errDuplicate = errors.New("already exists")

func decodeToken(m map[string]string) (*auth.Token, error) {
	f := &fields{m: m}
	if f.str("id") == "" {
		return nil, nil
	}
	t := &auth.Token{ID: f.str("id"), Name: f.str("name"), Hash: f.bytes("hash"), Audience: f.str("audience"),
		CreatedAt: f.time("created_at"), ExpiresAt: f.timePtr("expires_at")}
	if f.err != nil {
		return nil, f.err
	}
	var err error
	if t.Scopes, err = auth.StoredScopes(f.str("scopes")); err != nil {
		return nil, fmt.Errorf("token %q: %w", t.ID, err)
	}
	return t, nil
}

// CreateToken inserts t. A duplicate ID or hash is an error.
func (s *Store) CreateToken(ctx context.Context, t *auth.Token) error {
	member := sortKey(t.CreatedAt, t.ID)
	_, err := s.run(ctx, s.scripts.createToken, map[string]error{replyConflict: errDuplicate},
		[]string{s.k.token(t.ID), s.k.tokenHashes(), s.k.tokensByCreated()},
		t.ID, t.Hash, member, "id", t.ID, "name", t.Name, "hash", t.Hash,
		"scopes", t.Scopes.String(), "expires_at", tsPtr(t.ExpiresAt), "audience", t.Audience,
		"created_at", ts(t.CreatedAt), "sort_key", member)
	return wrapErr(fmt.Sprintf("creating token %q", t.Name), err)
}

// TokenByHash finds a token by the SHA-256 of its secret; none → auth.ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (*auth.Token, error) {
	id, err := s.rdb.HGet(ctx, s.k.tokenHashes(), string(hash)).Result()
	if errors.Is(err, redis.Nil) {
		err = auth.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("finding token: %w", err)
	}
	t, err := s.TokenByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("finding token: %w", err)
	}
	return t, nil
}

// TokenByID finds a token by its ID; none → auth.ErrNotFound.
func (s *Store) TokenByID(ctx context.Context, id string) (*auth.Token, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.token(id)).Result()
	var t *auth.Token
	if err == nil {
		t, err = decodeToken(m)
	}
	if err == nil && t == nil {
		err = auth.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("finding token %q: %w", id, err)
	}
	return t, nil
}

// ListTokens lists tokens oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]*auth.Token, error) {
	members, err := s.rdb.ZRange(ctx, s.k.tokensByCreated(), 0, -1).Result()
	if err != nil {
		return nil, wrapErr("listing tokens", err)
	}
	ids := make([]any, len(members))
	for i, m := range members {
		ids[i] = sortKeyID(m)
	}
	hashes, err := s.hashes(ctx, s.k.token, ids)
	if err != nil {
		return nil, wrapErr("listing tokens", err)
	}
	var out []*auth.Token
	for _, m := range hashes {
		t, err := decodeToken(m)
		if err != nil {
			return nil, wrapErr("listing tokens", err)
		}
		if t != nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// DeleteToken revokes a token; unknown → auth.ErrNotFound.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	_, err := s.run(ctx, s.scripts.deleteToken, map[string]error{replyNotFound: auth.ErrNotFound},
		[]string{s.k.token(id), s.k.tokenHashes(), s.k.tokensByCreated()})
	return wrapErr(fmt.Sprintf("deleting token %q", id), err)
}

// CountTokens counts the tokens not revoked.
func (s *Store) CountTokens(ctx context.Context) (int, error) {
	n, err := s.rdb.ZCard(ctx, s.k.tokensByCreated()).Result()
	if err != nil {
		return 0, fmt.Errorf("counting tokens: %w", err)
	}
	return int(n), nil
}
