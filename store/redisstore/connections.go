package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/storecodec"
)

func decodeConnection(m map[string]string) (*catalog.Connection, error) {
	f := &fields{m: m}
	if f.str("id") == "" {
		return nil, nil
	}
	c := &catalog.Connection{
		ID: f.str("id"), Name: f.str("name"), Type: f.str("type"), Header: f.str("header"),
		Username: f.str("username"), Sealed: f.bytes("sealed"), CreatedAt: f.time("created_at"),
	}
	hosts, err := storecodec.DecodeHosts(f.str("hosts"))
	c.Hosts = hosts
	return c, errors.Join(f.err, err)
}

// CreateConnection inserts c; a taken name (or ID) → catalog.ErrConflict.
func (s *Store) CreateConnection(ctx context.Context, c *catalog.Connection) error {
	hosts, err := storecodec.EncodeHosts(c.Hosts)
	if err != nil {
		return err
	}
	_, err = s.run(ctx, s.scripts.createConnection, catalogErrs,
		[]string{s.k.connection(c.ID), s.k.connectionNames(), s.k.connectionsByName()},
		c.ID, c.Name, "id", c.ID, "name", c.Name, "type", c.Type, "header", c.Header,
		"username", c.Username, "sealed", c.Sealed, "created_at", ts(c.CreatedAt), "hosts", hosts)
	if err != nil {
		return fmt.Errorf("creating connection %q: %w", c.Name, err)
	}
	return nil
}

// GetConnection finds a connection by ID or, failing that, by name.
func (s *Store) GetConnection(ctx context.Context, idOrName string) (*catalog.Connection, error) {
	c, err := s.connection(ctx, idOrName)
	if err == nil && c == nil {
		var id string
		id, err = s.rdb.HGet(ctx, s.k.connectionNames(), idOrName).Result()
		if err == nil {
			c, err = s.connection(ctx, id)
		}
	}
	if errors.Is(err, redis.Nil) || (err == nil && c == nil) {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("getting connection %q: %w", idOrName, err)
	}
	return c, nil
}

func (s *Store) connection(ctx context.Context, id string) (*catalog.Connection, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.connection(id)).Result()
	if err != nil {
		return nil, err
	}
	return decodeConnection(m)
}

// ListConnections lists connections ordered by name.
func (s *Store) ListConnections(ctx context.Context) ([]*catalog.Connection, error) {
	names, err := s.rdb.ZRange(ctx, s.k.connectionsByName(), 0, -1).Result()
	if err != nil || len(names) == 0 {
		return nil, wrapErr("listing connections", err)
	}
	ids, err := s.rdb.HMGet(ctx, s.k.connectionNames(), names...).Result()
	if err != nil {
		return nil, wrapErr("listing connections", err)
	}
	hashes, err := s.hashes(ctx, s.k.connection, ids)
	if err != nil {
		return nil, wrapErr("listing connections", err)
	}
	out := make([]*catalog.Connection, 0, len(hashes))
	for _, m := range hashes {
		c, err := decodeConnection(m)
		if err != nil {
			return nil, wrapErr("listing connections", err)
		}
		if c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// DeleteConnection removes a connection; unknown → catalog.ErrNotFound.
func (s *Store) DeleteConnection(ctx context.Context, id string) error {
	_, err := s.run(ctx, s.scripts.deleteConnection, catalogErrs,
		[]string{s.k.connection(id), s.k.connectionNames(), s.k.connectionsByName()}, id)
	return wrapErr(fmt.Sprintf("deleting connection %q", id), err)
}
