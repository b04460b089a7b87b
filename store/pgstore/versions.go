package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/storecodec"
)

const versionCols = `workflow_id, version, definition, hash, published_at, published_by`

func scanVersion(row pgx.Row) (*catalog.Version, error) {
	var v catalog.Version
	var def []byte
	var published int64
	var by string
	if err := row.Scan(&v.WorkflowID, &v.Version, &def, &v.Hash, &published, &by); err != nil {
		return nil, err
	}
	v.Definition, v.PublishedAt = def, fromNanos(published)
	var err error
	if v.PublishedBy, err = storecodec.DecodePublisher(by); err != nil {
		return nil, fmt.Errorf("version %d of workflow %q: %w", v.Version, v.WorkflowID, err)
	}
	return &v, nil
}

// Publish makes the draft of a live workflow its next version, unless the latest version
// has the same hash, and marks the workflow published. The workflow's row is locked while
// the version number is computed and the hash compared, so racing publishes cannot collide.
func (s *Store) Publish(ctx context.Context, workflowID, hash string, by auth.Principal, now time.Time) (*catalog.Version, bool, error) {
	publisher, err := storecodec.EncodePublisher(&by)
	if err != nil {
		return nil, false, fmt.Errorf("publishing workflow %q: %w", workflowID, err)
	}
	var (
		out     *catalog.Version
		created bool
	)
	err = s.write(ctx, func(q querier) error {
		var latest int
		err := q.QueryRow(ctx, `SELECT latest_version FROM workflows WHERE id = $1 AND deleted_at = 0 FOR UPDATE`,
			workflowID).Scan(&latest)
		if err != nil {
			return fmt.Errorf("publishing workflow %q: %w", workflowID, mapErr(ctx, err, catalog.ErrNotFound, nil))
		}
		out, created, err = publishVersion(ctx, q, workflowID, hash, publisher, latest, now)
		if err != nil {
			return fmt.Errorf("publishing workflow %q: %w", workflowID, err)
		}
		_, err = q.Exec(ctx, `UPDATE workflows SET published = true, latest_version = $1, updated_at = $2
			WHERE id = $3`, out.Version, nanos(now), workflowID)
		if err != nil {
			return fmt.Errorf("publishing workflow %q: %w", workflowID, err)
		}
		return s.bumpCatalog(ctx, q)
	})
	return out, created, err
}

// publishVersion returns the latest version when its hash matches, else inserts the next.
func publishVersion(ctx context.Context, q querier, workflowID, hash, publisher string, latest int, now time.Time) (*catalog.Version, bool, error) {
	if latest > 0 {
		v, err := getVersion(ctx, q, workflowID, latest)
		if err != nil || v.Hash == hash {
			return v, false, err
		}
	}
	v, err := scanVersion(q.QueryRow(ctx, `INSERT INTO workflow_versions (`+versionCols+`)
		SELECT id, $1, definition, $2, $3, $4 FROM workflows WHERE id = $5 RETURNING `+versionCols,
		latest+1, hash, nanos(now), publisher, workflowID))
	return v, err == nil, err
}

// GetVersion returns one version (0: the latest). Versions of a deleted workflow stay
// readable, for the runs admitted before the delete.
func (s *Store) GetVersion(ctx context.Context, workflowID string, version int) (*catalog.Version, error) {
	v, err := getVersion(ctx, s.pool, workflowID, version)
	if err != nil {
		return nil, fmt.Errorf("getting version %d of workflow %q: %w", version, workflowID, err)
	}
	return v, nil
}

func getVersion(ctx context.Context, q querier, workflowID string, version int) (*catalog.Version, error) {
	v, err := scanVersion(q.QueryRow(ctx, `SELECT `+versionCols+` FROM workflow_versions
		WHERE workflow_id = $1 AND (version = $2 OR $2 = 0) ORDER BY version DESC LIMIT 1`, workflowID, version))
	return v, mapErr(ctx, err, catalog.ErrNotFound, nil)
}

// ListVersions lists a workflow's versions, newest first. A workflow that never existed →
// catalog.ErrNotFound; one never published → an empty list.
func (s *Store) ListVersions(ctx context.Context, workflowID string) ([]*catalog.Version, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+versionCols+` FROM workflow_versions
		WHERE workflow_id = $1 ORDER BY version DESC`, workflowID)
	var vs []*catalog.Version
	if err == nil {
		vs, err = collect(rows, scanVersion)
	}
	if err != nil || len(vs) > 0 {
		return vs, wrapList(ctx, workflowID, err)
	}
	var one int
	err = s.pool.QueryRow(ctx, `SELECT 1 FROM workflows WHERE id = $1`, workflowID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("listing versions of %q: %w", workflowID, catalog.ErrNotFound)
	}
	return []*catalog.Version{}, wrapList(ctx, workflowID, err)
}

func wrapList(ctx context.Context, workflowID string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("listing versions of %q: %w", workflowID, unreachable(ctx, err))
}
