package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/store/storecodec"
)

func decodeVersion(m map[string]string) (*catalog.Version, error) {
	f := &fields{m: m}
	if f.str("workflow_id") == "" {
		return nil, catalog.ErrNotFound
	}
	v := &catalog.Version{
		WorkflowID: f.str("workflow_id"), Version: f.int("version"), Definition: f.bytes("definition"),
		Hash: f.str("hash"), PublishedAt: f.time("published_at"),
	}
	var err error
	if v.PublishedBy, err = storecodec.DecodePublisher(f.str("published_by")); err != nil {
		return nil, fmt.Errorf("version %d of workflow %q: %w", v.Version, v.WorkflowID, err)
	}
	return v, f.err
}

// Publish makes the draft of a live workflow its next version, unless the latest version
// has the same hash, and marks the workflow published, in one script.
func (s *Store) Publish(ctx context.Context, workflowID, hash string, by auth.Principal, now time.Time) (*catalog.Version, bool, error) {
	publisher, err := storecodec.EncodePublisher(&by)
	if err != nil {
		return nil, false, fmt.Errorf("publishing workflow %q: %w", workflowID, err)
	}
	k := s.k
	res, err := s.run(ctx, s.scripts.publish, catalogErrs,
		[]string{k.workflow(workflowID), k.workflowsPublished(), k.catalogVersion()},
		k.catalogChannel(), hash, ts(now), k.versionPrefix(workflowID), publisher)
	if err != nil {
		return nil, false, fmt.Errorf("publishing workflow %q: %w", workflowID, err)
	}
	out, _ := res.([]any)
	if len(out) != 2 {
		return nil, false, fmt.Errorf("publishing workflow %q: unexpected reply %v", workflowID, res)
	}
	n, _ := out[0].(int64)
	created, _ := out[1].(int64)
	v, err := s.GetVersion(ctx, workflowID, int(n))
	return v, created == 1, err
}

// GetVersion returns one version (0: the latest). Versions of a deleted workflow stay
// readable, for the runs admitted before the delete.
func (s *Store) GetVersion(ctx context.Context, workflowID string, version int) (*catalog.Version, error) {
	v, err := s.getVersion(ctx, workflowID, version)
	if err != nil {
		return nil, fmt.Errorf("getting version %d of workflow %q: %w", version, workflowID, err)
	}
	return v, nil
}

func (s *Store) getVersion(ctx context.Context, workflowID string, version int) (*catalog.Version, error) {
	if version == 0 {
		latest, err := s.latestVersion(ctx, workflowID)
		if err != nil {
			return nil, err
		}
		version = latest
	}
	m, err := s.rdb.HGetAll(ctx, s.k.version(workflowID, version)).Result()
	if err != nil {
		return nil, err
	}
	return decodeVersion(m)
}

// latestVersion reads a workflow's latest version number, also of a deleted workflow;
// one that never existed → catalog.ErrNotFound.
func (s *Store) latestVersion(ctx context.Context, workflowID string) (int, error) {
	vals, err := s.rdb.HMGet(ctx, s.k.workflow(workflowID), "id", "latest_version").Result()
	if err != nil {
		return 0, err
	}
	if vals[0] == nil {
		return 0, catalog.ErrNotFound
	}
	f := &fields{m: map[string]string{"latest_version": fmt.Sprint(vals[1])}}
	return f.int("latest_version"), f.err
}

// ListVersions lists a workflow's versions, newest first. A workflow that never existed →
// catalog.ErrNotFound; one never published → an empty list.
func (s *Store) ListVersions(ctx context.Context, workflowID string) ([]*catalog.Version, error) {
	latest, err := s.latestVersion(ctx, workflowID)
	if err != nil {
		return nil, fmt.Errorf("listing versions of %q: %w", workflowID, err)
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, 0, latest)
	for n := latest; n >= 1; n-- {
		cmds = append(cmds, pipe.HGetAll(ctx, s.k.version(workflowID, n)))
	}
	if latest > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("listing versions of %q: %w", workflowID, err)
		}
	}
	out := make([]*catalog.Version, 0, latest)
	for _, c := range cmds {
		v, err := decodeVersion(c.Val())
		if err != nil {
			return nil, fmt.Errorf("listing versions of %q: %w", workflowID, err)
		}
		out = append(out, v)
	}
	return out, nil
}
