package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/store/storecodec"
)

const workflowCols = `id, name, title, description, rev, definition, latest_version, published,
	webhook_token, webhook_sealed, created_at, updated_at`

func scanWorkflow(row pgx.Row) (*catalog.Workflow, error) {
	var w catalog.Workflow
	var def []byte
	var created, updated int64
	err := row.Scan(&w.ID, &w.Name, &w.Title, &w.Description, &w.Rev, &def, &w.LatestVersion,
		&w.Published, &w.WebhookDigest, &w.WebhookSealed, &created, &updated)
	if err != nil {
		return nil, err
	}
	w.Definition, w.CreatedAt, w.UpdatedAt = def, fromNanos(created), fromNanos(updated)
	if len(w.WebhookSealed) == 0 {
		w.WebhookSealed = nil
	}
	return &w, nil
}

// CreateWorkflow inserts w; a live workflow with the same name → catalog.ErrConflict.
func (s *Store) CreateWorkflow(ctx context.Context, w *catalog.Workflow) error {
	return s.write(ctx, func(q querier) error {
		_, err := q.Exec(ctx, `INSERT INTO workflows (`+workflowCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			w.ID, w.Name, w.Title, w.Description, w.Rev, []byte(w.Definition), w.LatestVersion,
			w.Published, w.WebhookDigest, sealedArg(w.WebhookSealed), nanos(w.CreatedAt), nanos(w.UpdatedAt))
		if err != nil {
			return fmt.Errorf("creating workflow %q: %w", w.Name, mapErr(ctx, err, catalog.ErrNotFound, catalog.ErrConflict))
		}
		return s.bumpCatalog(ctx, q)
	})
}

// GetWorkflow finds a live workflow by ID or, failing that, by name.
func (s *Store) GetWorkflow(ctx context.Context, idOrName string) (*catalog.Workflow, error) {
	return getWorkflow(ctx, s.pool, idOrName, "")
}

// getWorkflow looks up by ID, then by name, with lock appended to the query (FOR UPDATE
// within a change, "" for a read).
func getWorkflow(ctx context.Context, q querier, idOrName, lock string) (*catalog.Workflow, error) {
	w, err := scanWorkflow(q.QueryRow(ctx, `SELECT `+workflowCols+` FROM workflows
		WHERE (id = $1 OR name = $1) AND deleted_at = 0 ORDER BY id = $1 DESC LIMIT 1`+lock, idOrName))
	if err != nil {
		return nil, fmt.Errorf("getting workflow %q: %w", idOrName, mapErr(ctx, err, catalog.ErrNotFound, nil))
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
	w, err := scanWorkflow(s.pool.QueryRow(ctx, `SELECT `+workflowCols+` FROM workflows
		WHERE deleted_at = 0 AND webhook_token = $1`, digest))
	if err != nil {
		return nil, fmt.Errorf("getting workflow by webhook: %w", mapErr(ctx, err, catalog.ErrNotFound, nil))
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
	limit := limits.Page(p.Limit)
	rows, err := s.pool.Query(ctx, `SELECT `+workflowCols+` FROM workflows
		WHERE deleted_at = 0 AND name > $1 AND (published OR NOT $2) ORDER BY name LIMIT $3`,
		after, p.PublishedOnly, limit+1)
	var ws []*catalog.Workflow
	if err == nil {
		ws, err = collect(rows, scanWorkflow)
	}
	if err != nil {
		return nil, "", fmt.Errorf("listing workflows: %w", unreachable(ctx, err))
	}
	if len(ws) <= limit {
		return ws, "", nil
	}
	ws = ws[:limit]
	next, err := storecodec.EncodeCursor(ws[limit-1].Name)
	return ws, next, err
}

// UpdateDraft replaces the draft of a live workflow, bumping its Rev; the row is locked
// while its rev is compared.
func (s *Store) UpdateDraft(ctx context.Context, id string, w *catalog.Workflow, expectedRev int, now time.Time) (*catalog.Workflow, error) {
	var out *catalog.Workflow
	err := s.write(ctx, func(q querier) error {
		var rev int
		err := q.QueryRow(ctx, `SELECT rev FROM workflows WHERE id = $1 AND deleted_at = 0 FOR UPDATE`, id).Scan(&rev)
		if err != nil {
			return fmt.Errorf("updating workflow %q: %w", id, mapErr(ctx, err, catalog.ErrNotFound, nil))
		}
		if expectedRev > 0 && expectedRev != rev {
			return fmt.Errorf("updating workflow %q: rev is %d, not %d: %w", id, rev, expectedRev, catalog.ErrConflict)
		}
		out, err = scanWorkflow(q.QueryRow(ctx, `UPDATE workflows SET name = $1, title = $2, description = $3,
			definition = $4, rev = rev + 1, updated_at = $5 WHERE id = $6 RETURNING `+workflowCols,
			w.Name, w.Title, w.Description, []byte(w.Definition), nanos(now), id))
		if err != nil {
			return fmt.Errorf("updating workflow %q: %w", id, mapErr(ctx, err, catalog.ErrNotFound, catalog.ErrConflict))
		}
		return s.bumpCatalog(ctx, q)
	})
	return out, err
}

// DeleteWorkflow soft-deletes a live workflow: its name and webhook token are freed, its
// versions stay readable by GetVersion.
func (s *Store) DeleteWorkflow(ctx context.Context, id string, now time.Time) error {
	return s.write(ctx, func(q querier) error {
		n, err := affected(q.Exec(ctx, `UPDATE workflows SET deleted_at = $1, published = false
			WHERE id = $2 AND deleted_at = 0`, max(nanos(now), 1), id))
		if err != nil {
			return fmt.Errorf("deleting workflow %q: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("deleting workflow %q: %w", id, catalog.ErrNotFound)
		}
		return s.bumpCatalog(ctx, q)
	})
}

// Unpublish marks a live workflow unpublished.
func (s *Store) Unpublish(ctx context.Context, workflowID string, now time.Time) (*catalog.Workflow, error) {
	var out *catalog.Workflow
	err := s.write(ctx, func(q querier) error {
		var err error
		out, err = scanWorkflow(q.QueryRow(ctx, `UPDATE workflows SET published = false, updated_at = $1
			WHERE id = $2 AND deleted_at = 0 RETURNING `+workflowCols, nanos(now), workflowID))
		if err != nil {
			return fmt.Errorf("unpublishing workflow %q: %w", workflowID, mapErr(ctx, err, catalog.ErrNotFound, nil))
		}
		return s.bumpCatalog(ctx, q)
	})
	return out, err
}

// RotateWebhook replaces a live workflow's webhook digest and sealed token.
func (s *Store) RotateWebhook(ctx context.Context, workflowID, digest string, sealed []byte, now time.Time) error {
	return s.changeWebhook(ctx, "rotating", workflowID, `webhook_token = $1, webhook_sealed = $2, updated_at = $4`,
		`id = $3 AND deleted_at = 0`, digest, sealedArg(sealed), workflowID, nanos(now))
}

// SealWebhook replaces the plaintext webhook token of a live workflow not yet upgraded
// with its digest and sealed form, leaving rev, updated_at and the catalog version alone.
func (s *Store) SealWebhook(ctx context.Context, workflowID, token, digest string, sealed []byte) error {
	return s.changeWebhook(ctx, "sealing", workflowID, `webhook_token = $1, webhook_sealed = $2`,
		`id = $3 AND deleted_at = 0 AND webhook_token = $4 AND length(webhook_sealed) = 0`,
		digest, sealedArg(sealed), workflowID, token)
}

// changeWebhook sets a workflow's webhook columns where cond holds; no row → catalog.ErrNotFound,
// a digest taken → catalog.ErrConflict.
func (s *Store) changeWebhook(ctx context.Context, doing, workflowID, set, cond string, args ...any) error {
	return s.write(ctx, func(q querier) error {
		n, err := affected(q.Exec(ctx, `UPDATE workflows SET `+set+` WHERE `+cond, args...))
		if err == nil && n == 0 {
			err = catalog.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("%s webhook of %q: %w", doing, workflowID, mapErr(ctx, err, catalog.ErrNotFound, catalog.ErrConflict))
		}
		return nil
	})
}

// CatalogVersion returns the counter bumped by every catalog change.
func (s *Store) CatalogVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.pool.QueryRow(ctx, `SELECT value FROM counters WHERE name = 'catalog_version'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading catalog version: %w", unreachable(ctx, err))
	}
	return v, nil
}

// bumpCatalog moves the catalog version and notifies the processes sharing the store
// (events.Catalog), both in the caller's transaction: the notice leaves on commit only.
func (s *Store) bumpCatalog(ctx context.Context, q querier) error {
	if _, err := q.Exec(ctx, `UPDATE counters SET value = value + 1 WHERE name = 'catalog_version'`); err != nil {
		return fmt.Errorf("bumping catalog version: %w", err)
	}
	if _, err := q.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel(), catalogNotice); err != nil {
		return fmt.Errorf("notifying the catalog change: %w", err)
	}
	return nil
}
