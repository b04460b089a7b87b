// Package storecopy moves everything a store holds into an empty store of another kind
// (`gorunner store copy`, SPEC §7). Each backend exports (Source) and imports (Target) its
// records through the small contracts below, a stream of typed records in batches, so that
// the driver here never knows a backend's layout and a new field travels with its record.
// SQLite, PostgreSQL and Redis are all three, so a store of any kind copies into any kind.
package storecopy

import (
	"context"
	"errors"
	"fmt"
)

// Kind names a kind of record. Its fields are the columns of the table of that name in
// store/pgstore's schema (the canonical set; SQLite's schema and Redis's hashes have the
// same names): values are int64 (booleans 0 or 1, times UTC Unix nanoseconds as stored) or
// its decimal text (as Redis keeps them), string, []byte or nil, and encoded values (step
// records, errors, authorities) are store/storecodec's encodings, which every backend
// shares. A field a record lacks is its zero.
type Kind string

// Table is a kind with the fields that identify one of its records, its key.
type Table struct {
	Kind Kind
	Key  []string
	// Seeded: every store holds such records from its start (its counters), so that the
	// check that a target is empty passes them, and a copy overwrites them.
	Seeded bool
}

// Tables are every kind Copy moves, in the order it moves them: a record comes after those
// it refers to (versions after their workflow, a grant's tokens after the grant). What a
// store derives (its key counts per scope, its change log) is not copied: the target
// derives it anew.
var Tables = []Table{
	{Kind: "counters", Key: []string{"name"}, Seeded: true},
	{Kind: "workflows", Key: []string{"id"}},
	{Kind: "workflow_versions", Key: []string{"workflow_id", "version"}},
	{Kind: "connections", Key: []string{"id"}},
	{Kind: "api_tokens", Key: []string{"id"}},
	{Kind: "idempotency_keys", Key: []string{"scope", "key"}},
	{Kind: "runs", Key: []string{"id"}},
	{Kind: "run_steps", Key: []string{"run_id", "idx"}},
	{Kind: "hooks", Key: []string{"environment", "token"}},
	{Kind: "payloads", Key: []string{"seq"}},
	{Kind: "oauth_clients", Key: []string{"id"}},
	{Kind: "oauth_codes", Key: []string{"hash"}},
	{Kind: "oauth_grants", Key: []string{"id"}},
	{Kind: "oauth_refresh_tokens", Key: []string{"hash"}},
	{Kind: "oauth_grant_tokens", Key: []string{"grant_id", "seq"}},
	{Kind: "oauth_signin_codes", Key: []string{"hash"}},
}

// Derived are the tables of a SQL backend that hold no kind: what a store derives again
// from its records (its key counts per scope), its change log and its schema's state. A
// new table is one of these or of Tables (storecopytest.RequireEveryTable).
var Derived = []string{"idempotency_scopes", "events", "event_listeners", "schema_migrations", "sqlite_sequence"}

// Record is one stored record of a kind: its fields by name.
type Record struct {
	Kind   Kind
	Fields map[string]any
}

// BatchSize is how many records Copy asks a source for at a time and writes to the target
// in one transaction: big enough that a copy costs few round trips, small enough that one
// batch's memory stays a few megabytes with large step outputs.
const BatchSize = 500

// Source is what a backend offers a copy from it. Implementations: store/sqlitestore,
// store/pgstore and store/redisstore; storecopytest is the conformance suite they pass.
type Source interface {
	// CountRecords counts the records of kind the store holds.
	CountRecords(ctx context.Context, kind Kind) (int64, error)
	// ExportRecords hands every record of kind to emit in batches of up to size, in a
	// stable order; an error from emit ends the export with it.
	ExportRecords(ctx context.Context, kind Kind, size int, emit func([]Record) error) error
}

// Target is what a backend offers a copy into it: store/sqlitestore, store/pgstore and
// store/redisstore.
type Target interface {
	// CountRecords counts the records of kind the store holds.
	CountRecords(ctx context.Context, kind Kind) (int64, error)
	// ImportRecords writes records (all of one kind, as exported by any Source) in one
	// transaction. A field the store has no place for is an error, never dropped; a field
	// a record lacks takes the store's default (zero, empty).
	ImportRecords(ctx context.Context, kind Kind, records []Record) error
}

// Store is a backend that is both.
type Store interface {
	Source
	Target
}

// ErrNotEmpty is the error of a copy to a store that already holds records.
var ErrNotEmpty = errors.New("the target store is not empty")

// Progress hears how a copy goes: total once, before the first record, then done after
// each batch written.
type Progress interface {
	Start(total int64)
	Advance(kind Kind, done int64)
}

// Copy moves every record of every kind from `from` to `to`, which must be empty (else
// ErrNotEmpty, naming what it holds, before anything is written). Each batch is one
// transaction of the target: a copy that fails midway leaves a target to drop and copy
// again, never one to serve.
func Copy(ctx context.Context, from Source, to Target, progress Progress) error {
	if err := checkEmpty(ctx, to); err != nil {
		return err
	}
	var total int64
	for _, t := range Tables {
		n, err := from.CountRecords(ctx, t.Kind)
		if err != nil {
			return fmt.Errorf("counting the source's %s: %w", t.Kind, err)
		}
		total += n
	}
	progress.Start(total)
	var done int64
	for _, t := range Tables {
		k := t.Kind
		err := from.ExportRecords(ctx, k, BatchSize, func(batch []Record) error {
			if err := to.ImportRecords(ctx, k, batch); err != nil {
				return fmt.Errorf("writing %s: %w", k, err)
			}
			done += int64(len(batch))
			progress.Advance(k, done)
			return nil
		})
		if err != nil {
			return fmt.Errorf("copying %s: %w", k, err)
		}
	}
	return nil
}

// checkEmpty refuses a target holding any record.
func checkEmpty(ctx context.Context, to Target) error {
	for _, t := range Tables {
		if t.Seeded {
			continue
		}
		n, err := to.CountRecords(ctx, t.Kind)
		if err != nil {
			return fmt.Errorf("counting the target's %s: %w", t.Kind, err)
		}
		if n > 0 {
			return fmt.Errorf("%w: it holds %d %s; copy into a new, empty store", ErrNotEmpty, n, t.Kind)
		}
	}
	return nil
}

// Batches hands records from next to emit in batches of up to size: next returns false
// when there are no more. Backends export through it.
func Batches(size int, next func() (Record, bool, error), emit func([]Record) error) error {
	batch := make([]Record, 0, size)
	for {
		r, ok, err := next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if batch = append(batch, r); len(batch) == size {
			if err := emit(batch); err != nil {
				return err
			}
			batch = make([]Record, 0, size)
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return emit(batch)
}
