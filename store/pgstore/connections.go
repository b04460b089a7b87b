package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/storecodec"
)

const connectionCols = `id, name, type, header, username, sealed, created_at, hosts`

func scanConnection(row pgx.Row) (*catalog.Connection, error) {
	var c catalog.Connection
	var created int64
	var hosts string
	if err := row.Scan(&c.ID, &c.Name, &c.Type, &c.Header, &c.Username, &c.Sealed, &created, &hosts); err != nil {
		return nil, err
	}
	c.CreatedAt = fromNanos(created)
	var err error
	c.Hosts, err = storecodec.DecodeHosts(hosts)
	return &c, err
}

// CreateConnection inserts c; a taken name (or ID) → catalog.ErrConflict.
func (s *Store) CreateConnection(ctx context.Context, c *catalog.Connection) error {
	hosts, err := storecodec.EncodeHosts(c.Hosts)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO connections (`+connectionCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		c.ID, c.Name, c.Type, c.Header, c.Username, c.Sealed, nanos(c.CreatedAt), hosts)
	if err != nil {
		return fmt.Errorf("creating connection %q: %w", c.Name, mapErr(ctx, err, catalog.ErrNotFound, catalog.ErrConflict))
	}
	return nil
}

// GetConnection finds a connection by ID or, failing that, by name.
func (s *Store) GetConnection(ctx context.Context, idOrName string) (*catalog.Connection, error) {
	c, err := scanConnection(s.pool.QueryRow(ctx, `SELECT `+connectionCols+` FROM connections
		WHERE id = $1 OR name = $1 ORDER BY id = $1 DESC LIMIT 1`, idOrName))
	if err != nil {
		return nil, fmt.Errorf("getting connection %q: %w", idOrName, mapErr(ctx, err, catalog.ErrNotFound, nil))
	}
	return c, nil
}

// ListConnections lists connections ordered by name.
func (s *Store) ListConnections(ctx context.Context) ([]*catalog.Connection, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+connectionCols+` FROM connections ORDER BY name`)
	var cs []*catalog.Connection
	if err == nil {
		cs, err = collect(rows, scanConnection)
	}
	if err != nil {
		return nil, fmt.Errorf("listing connections: %w", unreachable(ctx, err))
	}
	return cs, nil
}

// DeleteConnection removes a connection; unknown → catalog.ErrNotFound.
func (s *Store) DeleteConnection(ctx context.Context, id string) error {
	return s.deleteOne(ctx, `DELETE FROM connections WHERE id = $1`, id, catalog.ErrNotFound, "deleting connection")
}

// deleteOne runs a DELETE of the row keyed id; none deleted → notFound.
func (s *Store) deleteOne(ctx context.Context, query, id string, notFound error, doing string) error {
	n, err := affected(s.pool.Exec(ctx, query, id))
	if err == nil && n == 0 {
		err = notFound
	}
	if err != nil {
		return fmt.Errorf("%s %q: %w", doing, id, unreachable(ctx, err))
	}
	return nil
}
