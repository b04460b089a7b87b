package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/store/storecodec"
)

const workflowCols = `id, name, title, description, rev, definition, latest_version, published,
	webhook_token, webhook_sealed, created_at, updated_at`

func scanWorkflow(row scanner) (*catalog.Workflow, error) {
	var w catalog.Workflow
	var def []byte
	var created, updated int64
	err := row.Scan(&w.ID, &w.Name, &w.Title, &w.Description, &w.Rev, &def, &w.LatestVersion,
		&w.Published, &w.WebhookDigest, &w.WebhookSealed, &created, &updated)
	if err != nil {
		return nil, err
	}
	w.Definition, w.CreatedAt, w.UpdatedAt = def, fromNanos(created), fromNanos(updated)
	return &w, nil
}

// CreateWorkflow inserts w; a live workflow with the same name → catalog.ErrConflict.
func (s *Store) CreateWorkflow(ctx context.Context, w *catalog.Workflow) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.in(tx).ExecContext(ctx, `INSERT INTO workflows (`+workflowCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.ID, w.Name, w.Title, w.Description, w.Rev, []byte(w.Definition), w.LatestVersion,
			w.Published, w.WebhookDigest, sealedArg(w.WebhookSealed), nanos(w.CreatedAt), nanos(w.UpdatedAt))
		if err != nil {
			return fmt.Errorf("creating workflow %q: %w", w.Name, mapErr(err, catalog.ErrNotFound, catalog.ErrConflict))
		}
		return bumpCatalog(ctx, s.in(tx))
	})
}

// GetWorkflow finds a live workflow by ID or, failing that, by name.
func (s *Store) GetWorkflow(ctx context.Context, idOrName string) (*catalog.Workflow, error) {
	return getWorkflow(ctx, s.q(), idOrName)
}

// getWorkflow looks up by ID, then by name: two indexed lookups. (An "id = ?1 OR name = ?1"
// makes SQLite scan the table, which every run admission would pay for.)
func getWorkflow(ctx context.Context, q querier, idOrName string) (*catalog.Workflow, error) {
	w, err := scanWorkflow(q.QueryRowContext(ctx, `SELECT `+workflowCols+` FROM (
		SELECT `+workflowCols+`, 0 AS pick FROM workflows WHERE id = ?1 AND deleted_at = 0
		UNION ALL
		SELECT `+workflowCols+`, 1 AS pick FROM workflows WHERE name = ?1 AND deleted_at = 0
	) ORDER BY pick LIMIT 1`, idOrName))
	if err != nil {
		return nil, fmt.Errorf("getting workflow %q: %w", idOrName, mapErr(err, catalog.ErrNotFound, nil))
	}
	return w, nil
}

// sealedArg is a sealed webhook token as written: never NULL, the column is NOT NULL.
func sealedArg(sealed []byte) []byte {
	if sealed == nil {
		return []byte{}
	}
	return sealed
}

// GetWorkflowByWebhook finds the live workflow whose webhook digest is digest.
func (s *Store) GetWorkflowByWebhook(ctx context.Context, digest string) (*catalog.Workflow, error) {
	w, err := scanWorkflow(s.q().QueryRowContext(ctx, `SELECT `+workflowCols+` FROM workflows
		WHERE deleted_at = 0 AND webhook_token = ?`, digest))
	if err != nil {
		return nil, fmt.Errorf("getting workflow by webhook: %w", mapErr(err, catalog.ErrNotFound, nil))
	}
	return w, nil
}

// ListWorkflows lists live workflows ordered by name; the cursor is the last name seen.
func (s *Store) ListWorkflows(ctx context.Context, p catalog.ListWorkflowsParams) ([]*catalog.Workflow, string, error) {
	var after string
	if p.Cursor != "" {
		if err := storecodec.DecodeCursor(p.Cursor, &after, catalog.ErrInvalidCursor); err != nil {
			return nil, "", err
		}
	}
	where := []string{"deleted_at = 0", "name > ?"}
	if p.PublishedOnly {
		where = append(where, "published = 1")
	}
	limit := limits.Page(p.Limit)
	rows, err := s.q().QueryContext(ctx, `SELECT `+workflowCols+` FROM workflows WHERE `+
		strings.Join(where, " AND ")+` ORDER BY name LIMIT ?`, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("listing workflows: %w", unavailable(err))
	}
	ws, err := collect(rows, scanWorkflow)
	if err != nil {
		return nil, "", fmt.Errorf("listing workflows: %w", unavailable(err))
	}
	if len(ws) <= limit {
		return ws, "", nil
	}
	ws = ws[:limit]
	next, err := storecodec.EncodeCursor(ws[limit-1].Name)
	return ws, next, err
}

// UpdateDraft replaces the draft of a live workflow, bumping its Rev.
func (s *Store) UpdateDraft(ctx context.Context, id string, w *catalog.Workflow, expectedRev int, now time.Time) (*catalog.Workflow, error) {
	var out *catalog.Workflow
	err := s.write(ctx, func(tx *sql.Tx) error {
		var rev int
		err := s.in(tx).QueryRowContext(ctx, `SELECT rev FROM workflows WHERE id = ? AND deleted_at = 0`, id).Scan(&rev)
		if err != nil {
			return fmt.Errorf("updating workflow %q: %w", id, mapErr(err, catalog.ErrNotFound, nil))
		}
		if expectedRev > 0 && expectedRev != rev {
			return fmt.Errorf("updating workflow %q: rev is %d, not %d: %w", id, rev, expectedRev, catalog.ErrConflict)
		}
		_, err = s.in(tx).ExecContext(ctx, `UPDATE workflows SET name = ?, title = ?, description = ?,
			definition = ?, rev = rev + 1, updated_at = ? WHERE id = ?`,
			w.Name, w.Title, w.Description, []byte(w.Definition), nanos(now), id)
		if err != nil {
			return fmt.Errorf("updating workflow %q: %w", id, mapErr(err, catalog.ErrNotFound, catalog.ErrConflict))
		}
		if err := bumpCatalog(ctx, s.in(tx)); err != nil {
			return err
		}
		out, err = getWorkflow(ctx, s.in(tx), id)
		return err
	})
	return out, err
}

// DeleteWorkflow soft-deletes a live workflow: its name and webhook token are freed, its
// versions stay readable by GetVersion.
func (s *Store) DeleteWorkflow(ctx context.Context, id string, now time.Time) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(s.in(tx).ExecContext(ctx, `UPDATE workflows SET deleted_at = ?, published = 0
			WHERE id = ? AND deleted_at = 0`, deletedMark(now), id))
		if err != nil {
			return fmt.Errorf("deleting workflow %q: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("deleting workflow %q: %w", id, catalog.ErrNotFound)
		}
		return bumpCatalog(ctx, s.in(tx))
	})
}

// deletedMark is the deleted_at value for a delete at now; never 0, which means live.
func deletedMark(now time.Time) int64 {
	return max(nanos(now), 1)
}

// Unpublish marks a live workflow unpublished.
func (s *Store) Unpublish(ctx context.Context, workflowID string, now time.Time) (*catalog.Workflow, error) {
	var out *catalog.Workflow
	err := s.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(s.in(tx).ExecContext(ctx, `UPDATE workflows SET published = 0, updated_at = ?
			WHERE id = ? AND deleted_at = 0`, nanos(now), workflowID))
		if err != nil {
			return fmt.Errorf("unpublishing workflow %q: %w", workflowID, err)
		}
		if n == 0 {
			return fmt.Errorf("unpublishing workflow %q: %w", workflowID, catalog.ErrNotFound)
		}
		if err := bumpCatalog(ctx, s.in(tx)); err != nil {
			return err
		}
		out, err = getWorkflow(ctx, s.in(tx), workflowID)
		return err
	})
	return out, err
}

// RotateWebhook replaces a live workflow's webhook digest and sealed token.
func (s *Store) RotateWebhook(ctx context.Context, workflowID, digest string, sealed []byte, now time.Time) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(s.in(tx).ExecContext(ctx, `UPDATE workflows SET webhook_token = ?, webhook_sealed = ?,
			updated_at = ? WHERE id = ? AND deleted_at = 0`, digest, sealedArg(sealed), nanos(now), workflowID))
		if err != nil {
			return fmt.Errorf("rotating webhook of %q: %w", workflowID, mapErr(err, catalog.ErrNotFound, catalog.ErrConflict))
		}
		if n == 0 {
			return fmt.Errorf("rotating webhook of %q: %w", workflowID, catalog.ErrNotFound)
		}
		return nil
	})
}

// SealWebhook replaces the plaintext webhook token of a live workflow not yet upgraded
// with its digest and sealed form, leaving rev, updated_at and the catalog version alone.
func (s *Store) SealWebhook(ctx context.Context, workflowID, token, digest string, sealed []byte) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(s.in(tx).ExecContext(ctx, `UPDATE workflows SET webhook_token = ?, webhook_sealed = ?
			WHERE id = ? AND deleted_at = 0 AND webhook_token = ? AND length(webhook_sealed) = 0`,
			digest, sealedArg(sealed), workflowID, token))
		if err != nil {
			return fmt.Errorf("sealing webhook of %q: %w", workflowID, mapErr(err, catalog.ErrNotFound, catalog.ErrConflict))
		}
		if n == 0 {
			return fmt.Errorf("sealing webhook of %q: %w", workflowID, catalog.ErrNotFound)
		}
		return nil
	})
}

// CatalogVersion returns the counter bumped by every catalog change.
func (s *Store) CatalogVersion(ctx context.Context) (int64, error) {
	return catalogVersion(ctx, s.q())
}

// catalogVersion reads the counter bumped by every catalog change, through q.
func catalogVersion(ctx context.Context, q querier) (int64, error) {
	var v int64
	if err := q.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'catalog_version'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading catalog version: %w", unavailable(err))
	}
	return v, nil
}

func bumpCatalog(ctx context.Context, q querier) error {
	if _, err := q.ExecContext(ctx, `UPDATE counters SET value = value + 1 WHERE name = 'catalog_version'`); err != nil {
		return fmt.Errorf("bumping catalog version: %w", err)
	}
	return nil
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
