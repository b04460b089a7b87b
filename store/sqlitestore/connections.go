package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/storecodec"
)

const connectionCols = `id, name, type, header, username, sealed, created_at, hosts`

func scanConnection(row scanner) (*catalog.Connection, error) {
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
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.in(tx).ExecContext(ctx, `INSERT INTO connections (`+connectionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Name, c.Type, c.Header, c.Username, c.Sealed, nanos(c.CreatedAt), hosts)
		if err != nil {
			return fmt.Errorf("creating connection %q: %w", c.Name, mapErr(err, catalog.ErrNotFound, catalog.ErrConflict))
		}
		return nil
	})
}

// GetConnection finds a connection by ID or, failing that, by name.
func (s *Store) GetConnection(ctx context.Context, idOrName string) (*catalog.Connection, error) {
	c, err := scanConnection(s.q().QueryRowContext(ctx, `SELECT `+connectionCols+` FROM connections
		WHERE id = ?1 OR name = ?1 ORDER BY id = ?1 DESC LIMIT 1`, idOrName))
	if err != nil {
		return nil, fmt.Errorf("getting connection %q: %w", idOrName, mapErr(err, catalog.ErrNotFound, nil))
	}
	return c, nil
}

// ListConnections lists connections ordered by name.
func (s *Store) ListConnections(ctx context.Context) ([]*catalog.Connection, error) {
	rows, err := s.q().QueryContext(ctx, `SELECT `+connectionCols+` FROM connections ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("listing connections: %w", unavailable(err))
	}
	cs, err := collect(rows, scanConnection)
	if err != nil {
		return nil, fmt.Errorf("listing connections: %w", unavailable(err))
	}
	return cs, nil
}

// DeleteConnection removes a connection; unknown → catalog.ErrNotFound.
func (s *Store) DeleteConnection(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(s.in(tx).ExecContext(ctx, `DELETE FROM connections WHERE id = ?`, id))
		if err == nil && n == 0 {
			err = catalog.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("deleting connection %q: %w", id, err)
		}
		return nil
	})
}
