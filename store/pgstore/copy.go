package pgstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/store/storecopy"
)

var _ storecopy.Store = (*Store)(nil)

// CountRecords counts the records of kind (storecopy.Store).
func (s *Store) CountRecords(ctx context.Context, kind storecopy.Kind) (int64, error) {
	t, err := storecopy.TableOf(kind)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := s.pool.QueryRow(ctx, t.Count()).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting %s: %w", kind, unreachable(ctx, err))
	}
	return n, nil
}

// ExportRecords hands every record of kind to emit in batches (storecopy.Store).
func (s *Store) ExportRecords(ctx context.Context, kind storecopy.Kind, size int, emit func([]storecopy.Record) error) error {
	t, err := storecopy.TableOf(kind)
	if err != nil {
		return err
	}
	cols, err := s.columns(ctx, kind)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(cols))
	for name := range cols {
		names = append(names, name)
	}
	rows, err := s.pool.Query(ctx, t.Select(names))
	if err != nil {
		return fmt.Errorf("reading %s: %w", kind, unreachable(ctx, err))
	}
	defer rows.Close()
	next := func() (storecopy.Record, bool, error) {
		if !rows.Next() {
			return storecopy.Record{}, false, unreachable(ctx, rows.Err())
		}
		vals, err := rows.Values()
		if err != nil {
			return storecopy.Record{}, false, fmt.Errorf("reading %s: %w", kind, err)
		}
		r := storecopy.Record{Kind: kind, Fields: make(map[string]any, len(names))}
		for i, name := range names {
			if r.Fields[name], err = storecopy.Value(vals[i]); err != nil {
				return r, false, fmt.Errorf("%s.%s: %w", kind, name, err)
			}
		}
		return r, true, nil
	}
	return storecopy.Batches(size, next, emit)
}

// ImportRecords writes records of kind in one transaction (storecopy.Store). Payloads keep
// their sequence numbers, and the sequence continues after the highest.
func (s *Store) ImportRecords(ctx context.Context, kind storecopy.Kind, records []storecopy.Record) error {
	t, err := storecopy.TableOf(kind)
	if err != nil {
		return err
	}
	cols, err := s.columns(ctx, kind)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, r := range records {
		names, args, err := storecopy.Row(r, cols)
		if err != nil {
			return err
		}
		b.Queue(t.Insert(names, func(i int) string { return "$" + strconv.Itoa(i) }), args...)
	}
	if kind == "payloads" {
		b.Queue(`SELECT setval(pg_get_serial_sequence('payloads', 'seq'), max(seq)) FROM payloads`)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("writing %s: %w", kind, unreachable(ctx, err))
	}
	return nil
}

// columns are the columns of kind's table in the store's schema, by name.
func (s *Store) columns(ctx context.Context, kind storecopy.Kind) (map[string]storecopy.Column, error) {
	rows, err := s.pool.Query(ctx, `SELECT column_name, data_type, is_nullable = 'NO' FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1`, string(kind))
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", kind, unreachable(ctx, err))
	}
	defer rows.Close()
	cols := map[string]storecopy.Column{}
	for rows.Next() {
		var c storecopy.Column
		var typ string
		if err := rows.Scan(&c.Name, &typ, &c.Required); err != nil {
			return nil, fmt.Errorf("reading the columns of %s: %w", kind, err)
		}
		if c.Type, err = columnType(typ); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", kind, c.Name, err)
		}
		cols[c.Name] = c
	}
	if err := rows.Err(); err != nil {
		return nil, unreachable(ctx, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("the store has no table %s", kind)
	}
	return cols, nil
}

// columnType is what a column of PostgreSQL's type typ holds.
func columnType(typ string) (storecopy.Type, error) {
	switch typ {
	case "integer", "bigint", "smallint":
		return storecopy.Int, nil
	case "boolean":
		return storecopy.Bool, nil
	case "text":
		return storecopy.Text, nil
	case "bytea":
		return storecopy.Bytes, nil
	}
	return 0, fmt.Errorf("a column of type %s cannot be copied", typ)
}
