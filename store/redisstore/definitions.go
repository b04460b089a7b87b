package redisstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/runner"
)

// A run of a published version keeps no copy of its definition: its hash refers to the
// version (workflow_id, version), whose record holds the definition once for all its runs
// and never changes (publish writes a version once; versions outlive their workflow). A
// run whose definition is not its version's (a test run of a draft, or one written before)
// keeps it inline in its 'definition' field, which readers take first. A run whose version
// record is gone (an evicting Redis dropped it, or a hand deleted it) reads without its
// definition: it is shown, cancelled and rerun as any other, and the worker that claims it
// ends it (runner: a run with no definition cannot go on).

// maxKeptDefinitionBytes bounds the version definitions a Store keeps in memory; past it
// the cache starts again empty.
const maxKeptDefinitionBytes = 32 << 20

type versionRef struct {
	workflowID string
	version    int
}

// definitions keeps the definitions of published versions read or checked, which never
// change, so that a run of a version costs its definition neither when written nor when read.
type definitions struct {
	mu    sync.Mutex
	by    map[versionRef]json.RawMessage
	bytes int
}

func (d *definitions) get(ref versionRef) (json.RawMessage, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	def, ok := d.by[ref]
	return def, ok
}

func (d *definitions) put(ref versionRef, def json.RawMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.by[ref]; ok {
		return
	}
	if d.by == nil || d.bytes+len(def) > maxKeptDefinitionBytes {
		d.by, d.bytes = map[versionRef]json.RawMessage{}, 0
	}
	d.by[ref] = bytes.Clone(def)
	d.bytes += len(def)
}

// versionDefinitions returns the definitions of refs' versions, kept or read in one round
// trip; a version that does not exist is missing from the answer.
func (s *Store) versionDefinitions(ctx context.Context, refs []versionRef) (map[versionRef]json.RawMessage, error) {
	out := make(map[versionRef]json.RawMessage, len(refs))
	var missing []versionRef
	for _, ref := range refs {
		if def, ok := s.defs.get(ref); ok {
			out[ref] = def
		} else if _, dup := out[ref]; !dup {
			missing = append(missing, ref)
			out[ref] = nil
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(missing))
	for i, ref := range missing {
		cmds[i] = pipe.HGet(ctx, s.k.version(ref.workflowID, ref.version), "definition")
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("reading version definitions: %w", err)
	}
	for i, ref := range missing {
		def, err := cmds[i].Bytes()
		if err == redis.Nil {
			delete(out, ref)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading version %d of workflow %q: %w", ref.version, ref.workflowID, err)
		}
		s.defs.put(ref, def)
		out[ref] = def
	}
	return out, nil
}

// byVersion reports whether r's definition is its version's, so that its hash need not
// keep it.
func (s *Store) byVersion(ctx context.Context, r *runner.Run) (bool, error) {
	if r.Version <= 0 || len(r.Definition) == 0 {
		return false, nil
	}
	ref := versionRef{r.WorkflowID, r.Version}
	if def, ok := s.defs.get(ref); ok {
		return bytes.Equal(def, r.Definition), nil
	}
	defs, err := s.versionDefinitions(ctx, []versionRef{ref})
	if err != nil {
		return false, err
	}
	def, ok := defs[ref]
	return ok && bytes.Equal(def, r.Definition), nil
}

// decodeOneRun is readRuns of one hash.
func (s *Store) decodeOneRun(ctx context.Context, m map[string]string) (*runner.Run, error) {
	runs, err := s.readRuns(ctx, []map[string]string{m})
	if err != nil {
		return nil, err
	}
	return runs[0], nil
}

// readRuns reads run hashes (a missing run → nil) and gives the runs that keep no
// definition of their own their version's, read in one round trip for all of them. A run
// whose version record is gone (an evicting Redis dropped it) is returned without its
// definition.
func (s *Store) readRuns(ctx context.Context, hashes []map[string]string) ([]*runner.Run, error) {
	runs := make([]*runner.Run, len(hashes))
	var refs []versionRef
	for i, m := range hashes {
		r, err := decodeRun(m)
		if err != nil {
			return nil, err
		}
		runs[i] = r
		if _, inline := m["definition"]; r != nil && !inline && r.Version > 0 {
			refs = append(refs, versionRef{r.WorkflowID, r.Version})
		}
	}
	if len(refs) == 0 {
		return runs, nil
	}
	defs, err := s.versionDefinitions(ctx, refs)
	if err != nil {
		return nil, err
	}
	for i, r := range runs {
		if _, inline := hashes[i]["definition"]; r == nil || inline || r.Version <= 0 {
			continue
		}
		if def, ok := defs[versionRef{r.WorkflowID, r.Version}]; ok {
			r.Definition = bytes.Clone(def)
		}
	}
	return runs, nil
}
