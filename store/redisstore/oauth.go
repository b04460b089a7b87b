package redisstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/oauth"
)

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
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.k.oauthClient(c.ID), "id", c.ID, "name", c.Name, "redirect_uris", uris,
			"grant_types", grants, "created_at", ts(c.CreatedAt))
		p.ZAdd(ctx, s.k.oauthClients(), redis.Z{Member: sortKey(c.CreatedAt, c.ID)})
		return nil
	})
	return wrapErr(fmt.Sprintf("registering client %q", c.ID), err)
}

// CountClients counts registered clients (those registered before the clients index
// existed are not counted).
func (s *Store) CountClients(ctx context.Context) (int, error) {
	n, err := s.rdb.ZCard(ctx, s.k.oauthClients()).Result()
	return int(n), wrapErr("counting clients", err)
}

// ClientsCreatedBefore lists the IDs of at most limit clients registered before t, oldest
// first.
func (s *Store) ClientsCreatedBefore(ctx context.Context, t time.Time, limit int) ([]string, error) {
	members, err := s.rdb.ZRangeByLex(ctx, s.k.oauthClients(), &redis.ZRangeBy{Min: "-", Max: "(" + ts(t),
		Count: int64(limit)}).Result()
	if err != nil {
		return nil, wrapErr("listing old clients", err)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = sortKeyID(m)
	}
	return ids, nil
}

// DeleteClient deletes a registered client; none → oauth.ErrNotFound.
func (s *Store) DeleteClient(ctx context.Context, id string) error {
	c, err := s.ClientByID(ctx, id)
	if err != nil {
		return fmt.Errorf("deleting client: %w", err)
	}
	var del *redis.IntCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		del = p.Del(ctx, s.k.oauthClient(id))
		p.ZRem(ctx, s.k.oauthClients(), sortKey(c.CreatedAt, id))
		return nil
	})
	if err == nil && del.Val() == 0 {
		err = oauth.ErrNotFound
	}
	return wrapErr(fmt.Sprintf("deleting client %q", id), err)
}

// ClientByID finds a registered client; none → oauth.ErrNotFound.
func (s *Store) ClientByID(ctx context.Context, id string) (*oauth.Client, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.oauthClient(id)).Result()
	if err == nil && m["id"] == "" {
		err = oauth.ErrNotFound
	}
	var c *oauth.Client
	if err == nil {
		f := &fields{m: m}
		c = &oauth.Client{ID: f.str("id"), Name: f.str("name"), CreatedAt: f.time("created_at")}
		err = errors.Join(f.err, json.Unmarshal(f.bytes("redirect_uris"), &c.RedirectURIs),
			json.Unmarshal(f.bytes("grant_types"), &c.GrantTypes))
	}
	if err != nil {
		return nil, fmt.Errorf("finding client %q: %w", id, err)
	}
	return c, nil
}

// keepUntil stores a code's hash (whose expiry the store does not check) until
// oauth.CodeRetention past its expiry.
func (s *Store) keepUntil(ctx context.Context, key string, expires time.Time, values ...any) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, values...)
		p.PExpireAt(ctx, key, expires.Add(oauth.CodeRetention))
		return nil
	})
	return err
}

// CreateCode stores an authorization code until oauth.CodeRetention past its expiry.
func (s *Store) CreateCode(ctx context.Context, c *oauth.Code) error {
	err := s.keepUntil(ctx, s.k.oauthCode(hex.EncodeToString(c.Hash)), c.ExpiresAt,
		"client_id", c.ClientID, "client_name", c.ClientName, "redirect_uri", c.RedirectURI,
		"challenge", c.Challenge, "scope", c.Scope, "principal_id", c.PrincipalID,
		"principal_name", c.PrincipalName, "expires_at", ts(c.ExpiresAt), "grant_id", c.GrantID)
	return wrapErr("storing code", err)
}

// ExchangeCode marks a code as used by grantID and returns it; used before →
// oauth.ErrCodeUsed with the code, which is deleted.
func (s *Store) ExchangeCode(ctx context.Context, hash []byte, grantID string) (*oauth.Code, error) {
	res, err := s.run(ctx, s.scripts.exchangeCode, map[string]error{replyNotFound: oauth.ErrNotFound},
		[]string{s.k.oauthCode(hex.EncodeToString(hash))}, grantID)
	reply, _ := res.([]any)
	if err == nil && len(reply)%2 != 1 {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return nil, fmt.Errorf("exchanging code: %w", err)
	}
	m := make(map[string]string, len(reply)/2)
	for i := 1; i+1 < len(reply); i += 2 {
		k, _ := reply[i].(string)
		m[k], _ = reply[i+1].(string)
	}
	f := &fields{m: m}
	c := &oauth.Code{Hash: hash, ClientID: f.str("client_id"), ClientName: f.str("client_name"),
		RedirectURI: f.str("redirect_uri"), Challenge: f.str("challenge"), Scope: f.str("scope"),
		PrincipalID: f.str("principal_id"), PrincipalName: f.str("principal_name"),
		ExpiresAt: f.time("expires_at"), GrantID: f.str("grant_id")}
	if f.err != nil {
		return nil, fmt.Errorf("exchanging code: %w", f.err)
	}
	if reply[0] == "USED" {
		return c, fmt.Errorf("exchanging code: %w", oauth.ErrCodeUsed)
	}
	return c, nil
}

// CreateGrant stores g with its refresh token and access tokens; when g.Code is set, only
// while that code is used by g (oauth.ErrCodeUsed otherwise): the code is watched, so a
// replay that deletes it between the check and the write fails the write, which is tried
// again.
func (s *Store) CreateGrant(ctx context.Context, g *oauth.Grant) error {
	var watch []string
	if g.Code != nil {
		watch = []string{s.k.oauthCode(hex.EncodeToString(g.Code))}
	}
	var err error
	for range 3 {
		err = s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			if g.Code != nil {
				usedBy, err := tx.HGet(ctx, watch[0], "grant_id").Result()
				if errors.Is(err, redis.Nil) || (err == nil && usedBy != g.ID) {
					return oauth.ErrCodeUsed
				}
				if err != nil {
					return err
				}
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				s.storeGrant(ctx, p, g)
				return nil
			})
			return err
		}, watch...)
		if !errors.Is(err, redis.TxFailedErr) {
			break
		}
	}
	return wrapErr(fmt.Sprintf("storing grant %q", g.ID), err)
}

// issuedOf is how many access tokens a grant was issued: 1 for a grant stored before
// grants counted them (the code exchange's), as the SQL backends' column default.
func issuedOf(f *fields) int {
	if _, ok := f.m["tokens_issued"]; !ok {
		return 1
	}
	return f.int("tokens_issued")
}

// storeGrant queues the writes of a new grant.
func (s *Store) storeGrant(ctx context.Context, p redis.Pipeliner, g *oauth.Grant) {
	member := sortKey(g.CreatedAt, g.ID)
	refresh := hex.EncodeToString(g.RefreshHash)
	p.HSet(ctx, s.k.oauthGrant(g.ID), "id", g.ID, "client_id", g.ClientID, "client_name", g.ClientName,
		"principal_id", g.PrincipalID, "principal_name", g.PrincipalName, "scope", g.Scope,
		"created_at", ts(g.CreatedAt), "refresh_hash", refresh, "refresh_expires_at", ts(g.RefreshExpiresAt),
		"sort_key", member, "tokens_issued", g.Issued)
	p.HSet(ctx, s.k.oauthRefresh(), refresh, g.ID)
	p.SAdd(ctx, s.k.oauthGrantRefresh(g.ID), refresh)
	for _, t := range g.TokenIDs {
		p.RPush(ctx, s.k.oauthGrantTokens(g.ID), t)
		p.HSet(ctx, s.k.oauthTokenGrant(), t, g.ID)
	}
	p.ZAdd(ctx, s.k.oauthGrants(), redis.Z{Member: member})
	p.ZAdd(ctx, s.k.oauthGrantsOf(g.PrincipalID), redis.Z{Member: member})
}

// grants reads grants by ID with their token IDs, skipping those gone meanwhile.
func (s *Store) grants(ctx context.Context, ids []string) ([]*oauth.Grant, error) {
	pipe := s.rdb.Pipeline()
	hs := make([]*redis.MapStringStringCmd, len(ids))
	ls := make([]*redis.StringSliceCmd, len(ids))
	for i, id := range ids {
		hs[i] = pipe.HGetAll(ctx, s.k.oauthGrant(id))
		ls[i] = pipe.LRange(ctx, s.k.oauthGrantTokens(id), 0, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]*oauth.Grant, 0, len(ids))
	for i := range ids {
		f := &fields{m: hs[i].Val()}
		if f.str("id") == "" {
			continue
		}
		refresh, err := hex.DecodeString(f.str("refresh_hash"))
		g := &oauth.Grant{ID: f.str("id"), ClientID: f.str("client_id"), ClientName: f.str("client_name"),
			PrincipalID: f.str("principal_id"), PrincipalName: f.str("principal_name"), Scope: f.str("scope"),
			CreatedAt: f.time("created_at"), RefreshHash: refresh, RefreshExpiresAt: f.time("refresh_expires_at"),
			TokenIDs: ls[i].Val(), Issued: issuedOf(f)}
		if err = errors.Join(err, f.err); err != nil {
			return nil, err
		}
		if len(g.TokenIDs) == 0 {
			g.TokenIDs = nil
		}
		out = append(out, g)
	}
	return out, nil
}

// GrantByID finds a grant; none → oauth.ErrNotFound.
func (s *Store) GrantByID(ctx context.Context, id string) (*oauth.Grant, error) {
	gs, err := s.grants(ctx, []string{id})
	if err == nil && len(gs) == 0 {
		err = oauth.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("finding grant %q: %w", id, err)
	}
	return gs[0], nil
}

// GrantByToken finds the grant holding an access token; none → oauth.ErrNotFound.
func (s *Store) GrantByToken(ctx context.Context, tokenID string) (*oauth.Grant, error) {
	id, err := s.rdb.HGet(ctx, s.k.oauthTokenGrant(), tokenID).Result()
	var g *oauth.Grant
	if err == nil {
		g, err = s.GrantByID(ctx, id)
	}
	if errors.Is(err, redis.Nil) || (err == nil && !slices.Contains(g.TokenIDs, tokenID)) {
		err = oauth.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("finding grant by access token %q: %w", tokenID, err)
	}
	return g, nil
}

// GrantByRefresh finds the grant of a refresh token, current or rotated away.
func (s *Store) GrantByRefresh(ctx context.Context, hash []byte) (*oauth.Grant, error) {
	id, err := s.rdb.HGet(ctx, s.k.oauthRefresh(), hex.EncodeToString(hash)).Result()
	if errors.Is(err, redis.Nil) {
		err = oauth.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("finding grant by refresh token: %w", err)
	}
	return s.GrantByID(ctx, id)
}

// ListGrants lists a principal's grants (all when principalID is ""), oldest first.
func (s *Store) ListGrants(ctx context.Context, principalID string) ([]*oauth.Grant, error) {
	key := s.k.oauthGrants()
	if principalID != "" {
		key = s.k.oauthGrantsOf(principalID)
	}
	members, err := s.rdb.ZRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, wrapErr("listing grants", err)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = sortKeyID(m)
	}
	gs, err := s.grants(ctx, ids)
	return gs, wrapErr("listing grants", err)
}

// RotateRefresh replaces the grant's current refresh token; a rotated-away one →
// oauth.ErrRefreshReused with the grant.
func (s *Store) RotateRefresh(ctx context.Context, p oauth.RotateParams) (*oauth.Grant, error) {
	res, err := s.run(ctx, s.scripts.rotateRefresh, map[string]error{replyNotFound: oauth.ErrNotFound},
		[]string{s.k.oauthRefresh()}, hex.EncodeToString(p.Old), hex.EncodeToString(p.New), ts(p.ExpiresAt),
		p.TokenID, s.k.oauthGrantPrefix(), s.k.oauthGrantTokens(""), s.k.oauthGrantRefresh(""), s.k.oauthTokenGrant())
	var re redis.Error
	if errors.As(err, &re) {
		if word, id, _ := cutWord(re.Error()); word == replyUsed {
			g, gerr := s.GrantByID(ctx, id)
			if gerr != nil {
				return nil, fmt.Errorf("rotating refresh token: %w", gerr)
			}
			return g, fmt.Errorf("rotating refresh token: %w", oauth.ErrRefreshReused)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("rotating refresh token: %w", err)
	}
	id, _ := res.(string)
	g, err := s.GrantByID(ctx, id)
	return g, wrapErr("rotating refresh token", err)
}

// DeleteGrant deletes a grant with its refresh tokens and returns it as it was.
func (s *Store) DeleteGrant(ctx context.Context, id string) (*oauth.Grant, error) {
	g, err := s.GrantByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("deleting grant: %w", err)
	}
	res, err := s.run(ctx, s.scripts.deleteGrant, map[string]error{replyNotFound: oauth.ErrNotFound},
		[]string{s.k.oauthGrant(id), s.k.oauthGrantTokens(id), s.k.oauthGrantRefresh(id), s.k.oauthRefresh(),
			s.k.oauthGrants(), s.k.oauthGrantsOf(g.PrincipalID), s.k.oauthTokenGrant()})
	if err != nil {
		return nil, fmt.Errorf("deleting grant %q: %w", id, err)
	}
	tokens, _ := res.([]any)
	g.TokenIDs = nil
	for _, t := range tokens {
		if t, ok := t.(string); ok {
			g.TokenIDs = append(g.TokenIDs, t)
		}
	}
	return g, nil
}

// CreateSignInCode stores a one-time sign-in code until oauth.CodeRetention past its expiry.
func (s *Store) CreateSignInCode(ctx context.Context, c *oauth.SignInCode) error {
	err := s.keepUntil(ctx, s.k.oauthSignIn(hex.EncodeToString(c.Hash)), c.ExpiresAt,
		"principal_id", c.PrincipalID, "principal_name", c.PrincipalName, "scope", c.Scope,
		"expires_at", ts(c.ExpiresAt))
	return wrapErr("storing sign-in code", err)
}

// TakeSignInCode deletes a sign-in code and returns it; none → oauth.ErrNotFound.
func (s *Store) TakeSignInCode(ctx context.Context, hash []byte) (*oauth.SignInCode, error) {
	key := s.k.oauthSignIn(hex.EncodeToString(hash))
	var get *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.HGetAll(ctx, key)
		p.Del(ctx, key)
		return nil
	})
	if err == nil && get.Val()["principal_id"] == "" {
		err = oauth.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("taking sign-in code: %w", err)
	}
	f := &fields{m: get.Val()}
	c := &oauth.SignInCode{Hash: hash, PrincipalID: f.str("principal_id"), PrincipalName: f.str("principal_name"),
		Scope: f.str("scope"), ExpiresAt: f.time("expires_at")}
	return c, wrapErr("taking sign-in code", f.err)
}
