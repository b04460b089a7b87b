package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/gorunner/gorunner/store/storecodec"
	"github.com/gorunner/gorunner/store/storecopy"
)

var _ storecopy.Store = (*Store)(nil)

// sqliteOnly are the columns of this schema that are no field of their kind: the step
// records of a run admitted already ended, kept in its own row (exported as run_steps
// records instead), and the mark of an abandoned key claim, which makeRoom derives again.
var sqliteOnly = map[storecopy.Kind]string{"runs": "steps", "idempotency_keys": "abandoned"}

// CountRecords counts the records of kind (storecopy.Store); a run's steps kept in its
// own row count as its run_steps.
func (s *Store) CountRecords(ctx context.Context, kind storecopy.Kind) (int64, error) {
	t, err := storecopy.TableOf(kind)
	if err != nil {
		return 0, err
	}
	q := t.Count()
	if kind == "run_steps" {
		q = `SELECT (` + q + `) + coalesce((SELECT sum(json_array_length(CAST(steps AS TEXT))) FROM runs WHERE steps IS NOT NULL), 0)`
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting %s: %w", kind, err)
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
		if sqliteOnly[kind] != name {
			names = append(names, name)
		}
	}
	if err := s.exportRows(ctx, kind, t.Select(names), names, size, emit); err != nil {
		return err
	}
	if kind == "run_steps" {
		return s.exportRowSteps(ctx, size, emit)
	}
	return nil
}

// exportRows emits the records query reads, a column of names each.
func (s *Store) exportRows(ctx context.Context, kind storecopy.Kind, query string, names []string, size int, emit func([]storecopy.Record) error) error {
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kind, err)
	}
	defer rows.Close()
	next := func() (storecopy.Record, bool, error) {
		if !rows.Next() {
			return storecopy.Record{}, false, rows.Err()
		}
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return storecopy.Record{}, false, fmt.Errorf("reading %s: %w", kind, err)
		}
		r := storecopy.Record{Kind: kind, Fields: make(map[string]any, len(names))}
		for i, name := range names {
			v, err := storecopy.Value(vals[i])
			if err != nil {
				return r, false, fmt.Errorf("%s.%s: %w", kind, name, err)
			}
			r.Fields[name] = v
		}
		return r, true, nil
	}
	return storecopy.Batches(size, next, emit)
}

// exportRowSteps emits the step records of the runs that keep theirs in their own row
// (see insertRun) as run_steps records, each encoded as a saved step is.
func (s *Store) exportRowSteps(ctx context.Context, size int, emit func([]storecopy.Record) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id, steps FROM runs WHERE steps IS NOT NULL ORDER BY id`)
	if err != nil {
		return fmt.Errorf("reading the steps kept in runs: %w", err)
	}
	defer rows.Close()
	var pending []storecopy.Record
	next := func() (storecopy.Record, bool, error) {
		for len(pending) == 0 {
			if !rows.Next() {
				return storecopy.Record{}, false, rows.Err()
			}
			var err error
			if pending, err = rowSteps(rows); err != nil {
				return storecopy.Record{}, false, err
			}
		}
		r := pending[0]
		pending = pending[1:]
		return r, true, nil
	}
	return storecopy.Batches(size, next, emit)
}

// rowSteps are the run_steps records of the run rows is at.
func rowSteps(rows *sql.Rows) ([]storecopy.Record, error) {
	var id string
	var b []byte
	if err := rows.Scan(&id, &b); err != nil {
		return nil, fmt.Errorf("reading the steps kept in runs: %w", err)
	}
	steps, err := storecodec.DecodeSteps(b)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	out := make([]storecopy.Record, len(steps))
	for i, st := range steps {
		data, err := storecodec.EncodeStep(st)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		out[i] = storecopy.Record{Kind: "run_steps", Fields: map[string]any{"run_id": id, "idx": int64(i), "data": data}}
	}
	return out, nil
}

// ImportRecords writes records of kind in one transaction (storecopy.Store).
func (s *Store) ImportRecords(ctx context.Context, kind storecopy.Kind, records []storecopy.Record) error {
	t, err := storecopy.TableOf(kind)
	if err != nil {
		return err
	}
	cols, err := s.columns(ctx, kind)
	if err != nil {
		return err
	}
	delete(cols, sqliteOnly[kind])
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, r := range records {
			names, args, err := storecopy.Row(r, cols)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, t.Insert(names, func(int) string { return "?" }), args...); err != nil {
				return fmt.Errorf("writing %s: %w", kind, err)
			}
		}
		return nil
	})
}

// columns are the columns of kind's table, by name.
func (s *Store) columns(ctx context.Context, kind storecopy.Kind) (map[string]storecopy.Column, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, type, "notnull" FROM pragma_table_info(?)`, string(kind))
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", kind, err)
	}
	defer rows.Close()
	cols := map[string]storecopy.Column{}
	for rows.Next() {
		var c storecopy.Column
		var typ string
		if err := rows.Scan(&c.Name, &typ, &c.Required); err != nil {
			return nil, fmt.Errorf("reading the columns of %s: %w", kind, err)
		}
		c.Type = columnType(typ)
		cols[c.Name] = c
	}
	return cols, rows.Err()
}

// columnType is what a column of SQLite's declared type holds; booleans are integers.
func columnType(declared string) storecopy.Type {
	switch strings.ToUpper(declared) {
	case "INTEGER":
		return storecopy.Int
	case "TEXT":
		return storecopy.Text
	}
	return storecopy.Bytes
}
