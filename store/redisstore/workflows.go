package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/store/storecodec"
)

// catalogErrs maps script replies to the catalog's sentinels.
var catalogErrs = map[string]error{replyNotFound: catalog.ErrNotFound, replyConflict: catalog.ErrConflict}

func workflowFields(w *catalog.Workflow) []any {
	return []any{
		"id", w.ID, "name", w.Name, "title", w.Title, "description", w.Description, "rev", w.Rev,
		"definition", []byte(w.Definition), "latest_version", w.LatestVersion, "published", boolArg(w.Published),
		"webhook_token", w.WebhookDigest, "webhook_sealed", w.WebhookSealed, "created_at", ts(w.CreatedAt), "updated_at", ts(w.UpdatedAt),
		"deleted_at", ts(time.Time{}),
	}
}

// decodeWorkflow reads a workflow hash; a missing or deleted one → nil.
func decodeWorkflow(m map[string]string) (*catalog.Workflow, error) {
	f := &fields{m: m}
	if f.str("id") == "" || !f.time("deleted_at").IsZero() {
		return nil, f.err
	}
	w := &catalog.Workflow{
		ID: f.str("id"), Name: f.str("name"), Title: f.str("title"), Description: f.str("description"),
		Rev: f.int("rev"), Definition: f.bytes("definition"), LatestVersion: f.int("latest_version"),
		Published: f.bool("published"), WebhookDigest: f.str("webhook_token"), WebhookSealed: f.bytes("webhook_sealed"),
		CreatedAt: f.time("created_at"), UpdatedAt: f.time("updated_at"),
	}
	return w, f.err
}

// CreateWorkflow inserts w; a live workflow with the same name (or a taken ID or webhook
// digest) → catalog.ErrConflict. The field webhook_token holds the digest (its name kept,
// so that a process of the version before keeps reading the record while both run).
func (s *Store) CreateWorkflow(ctx context.Context, w *catalog.Workflow) error {
	k := s.k
	args := append([]any{k.catalogChannel(), w.ID, w.Name, w.WebhookDigest, boolArg(w.Published)}, workflowFields(w)...)
	_, err := s.run(ctx, s.scripts.createWorkflow, catalogErrs,
		[]string{k.workflow(w.ID), k.workflowNames(), k.workflowWebhooks(), k.workflowsByName(),
			k.workflowsPublished(), k.catalogVersion()}, args...)
	if err != nil {
		return fmt.Errorf("creating workflow %q: %w", w.Name, err)
	}
	return nil
}

// GetWorkflow finds a live workflow by ID or, failing that, by name.
func (s *Store) GetWorkflow(ctx context.Context, idOrName string) (*catalog.Workflow, error) {
	w, err := s.workflowByID(ctx, idOrName)
	if err == nil && w == nil {
		w, err = s.workflowByIndex(ctx, s.k.workflowNames(), idOrName)
	}
	return foundWorkflow(w, err, fmt.Sprintf("getting workflow %q", idOrName))
}

// GetWorkflowByWebhook finds the live workflow whose webhook digest is digest.
func (s *Store) GetWorkflowByWebhook(ctx context.Context, digest string) (*catalog.Workflow, error) {
	w, err := s.workflowByIndex(ctx, s.k.workflowWebhooks(), digest)
	return foundWorkflow(w, err, "getting workflow by webhook")
}

// foundWorkflow turns a missing workflow into catalog.ErrNotFound and says what was done.
func foundWorkflow(w *catalog.Workflow, err error, doing string) (*catalog.Workflow, error) {
	if err == nil && w == nil {
		err = catalog.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", doing, err)
	}
	return w, nil
}

// workflowByID reads a live workflow; none → nil.
func (s *Store) workflowByID(ctx context.Context, id string) (*catalog.Workflow, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.workflow(id)).Result()
	if err != nil {
		return nil, err
	}
	return decodeWorkflow(m)
}

// workflowByIndex reads the live workflow an index hash (names, webhooks) points at.
func (s *Store) workflowByIndex(ctx context.Context, index, field string) (*catalog.Workflow, error) {
	id, err := s.rdb.HGet(ctx, index, field).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.workflowByID(ctx, id)
}

// ListWorkflows lists live workflows ordered by name; the cursor is the last name seen.
func (s *Store) ListWorkflows(ctx context.Context, p catalog.ListWorkflowsParams) ([]*catalog.Workflow, string, error) {
	var after string
	if p.Cursor != "" {
		if err := storecodec.DecodeCursor(p.Cursor, &after, catalog.ErrInvalidCursor); err != nil {
			return nil, "", err
		}
	}
	index, low := s.k.workflowsByName(), "-"
	if p.PublishedOnly {
		index = s.k.workflowsPublished()
	}
	if after != "" {
		low = "(" + after
	}
	limit := limits.Page(p.Limit)
	names, err := s.rdb.ZRangeByLex(ctx, index, &redis.ZRangeBy{Min: low, Max: "+", Count: int64(limit + 1)}).Result()
	if err != nil {
		return nil, "", fmt.Errorf("listing workflows: %w", err)
	}
	ws, err := s.workflowsNamed(ctx, names)
	if err != nil {
		return nil, "", fmt.Errorf("listing workflows: %w", err)
	}
	if len(names) <= limit {
		return ws, "", nil
	}
	ws = ws[:min(len(ws), limit)]
	next, err := storecodec.EncodeCursor(names[limit-1])
	return ws, next, err
}

// workflowsNamed reads the live workflows of names in order, skipping any gone meanwhile.
func (s *Store) workflowsNamed(ctx context.Context, names []string) ([]*catalog.Workflow, error) {
	out := []*catalog.Workflow{}
	if len(names) == 0 {
		return out, nil
	}
	ids, err := s.rdb.HMGet(ctx, s.k.workflowNames(), names...).Result()
	if err != nil {
		return nil, err
	}
	hs, err := s.hashes(ctx, s.k.workflow, ids)
	if err != nil {
		return nil, err
	}
	for _, m := range hs {
		w, err := decodeWorkflow(m)
		if err != nil {
			return nil, err
		}
		if w != nil {
			out = append(out, w)
		}
	}
	return out, nil
}

// UpdateDraft replaces the draft of a live workflow, bumping its Rev.
func (s *Store) UpdateDraft(ctx context.Context, id string, w *catalog.Workflow, expectedRev int, now time.Time) (*catalog.Workflow, error) {
	k := s.k
	res, err := s.run(ctx, s.scripts.updateDraft, catalogErrs,
		[]string{k.workflow(id), k.workflowNames(), k.workflowsByName(), k.workflowsPublished(), k.catalogVersion()},
		k.catalogChannel(), id, expectedRev, w.Name, w.Title, w.Description, []byte(w.Definition), ts(now))
	if err != nil {
		return nil, fmt.Errorf("updating workflow %q: %w", id, err)
	}
	out, err := decodeWorkflow(flatMap(res))
	return foundWorkflow(out, err, fmt.Sprintf("updating workflow %q", id))
}

// DeleteWorkflow soft-deletes a live workflow: its name and webhook token are freed, its
// versions stay readable by GetVersion.
func (s *Store) DeleteWorkflow(ctx context.Context, id string, now time.Time) error {
	k := s.k
	_, err := s.run(ctx, s.scripts.deleteWorkflow, catalogErrs,
		[]string{k.workflow(id), k.workflowNames(), k.workflowWebhooks(), k.workflowsByName(),
			k.workflowsPublished(), k.catalogVersion()},
		k.catalogChannel(), id, ts(time.Unix(0, max(now.UnixNano(), 1))))
	if err != nil {
		return fmt.Errorf("deleting workflow %q: %w", id, err)
	}
	return nil
}

// Unpublish marks a live workflow unpublished.
func (s *Store) Unpublish(ctx context.Context, workflowID string, now time.Time) (*catalog.Workflow, error) {
	k := s.k
	res, err := s.run(ctx, s.scripts.unpublish, catalogErrs,
		[]string{k.workflow(workflowID), k.workflowsPublished(), k.catalogVersion()}, k.catalogChannel(), ts(now))
	if err != nil {
		return nil, fmt.Errorf("unpublishing workflow %q: %w", workflowID, err)
	}
	out, err := decodeWorkflow(flatMap(res))
	return foundWorkflow(out, err, fmt.Sprintf("unpublishing workflow %q", workflowID))
}

// RotateWebhook replaces a live workflow's webhook digest and sealed token.
func (s *Store) RotateWebhook(ctx context.Context, workflowID, digest string, sealed []byte, now time.Time) error {
	_, err := s.run(ctx, s.scripts.rotateWebhook, catalogErrs,
		[]string{s.k.workflow(workflowID), s.k.workflowWebhooks()}, workflowID, digest, sealed, ts(now))
	if err != nil {
		return fmt.Errorf("rotating webhook of %q: %w", workflowID, err)
	}
	return nil
}

// SealWebhook replaces the plaintext webhook token of a live workflow not yet upgraded
// with its digest and sealed form, leaving rev, updated_at and the catalog version alone.
func (s *Store) SealWebhook(ctx context.Context, workflowID, token, digest string, sealed []byte) error {
	_, err := s.run(ctx, s.scripts.sealWebhook, catalogErrs,
		[]string{s.k.workflow(workflowID), s.k.workflowWebhooks()}, workflowID, token, digest, sealed)
	if err != nil {
		return fmt.Errorf("sealing webhook of %q: %w", workflowID, err)
	}
	return nil
}

// CatalogVersion returns the counter bumped by every catalog change.
func (s *Store) CatalogVersion(ctx context.Context) (int64, error) {
	v, err := s.rdb.Get(ctx, s.k.catalogVersion()).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading catalog version: %w", err)
	}
	return v, nil
}
