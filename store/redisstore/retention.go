package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gorunner/gorunner/runner"
)

// replyActive is delete_runs' refusal of a run that has not ended.
const replyActive = "GR_ACTIVE"

// deleteErrs maps delete_runs' refusals.
var deleteErrs = map[string]error{replyNotFound: runner.ErrNotFound, replyActive: runner.ErrRunActive}

// DeleteRun deletes an ended run with its steps, hooks, queued payloads and index entries.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	_, err := s.run(ctx, s.scripts.deleteRuns, deleteErrs, []string{s.k.runsCreated()}, s.k.p, "one", id)
	if err != nil {
		return fmt.Errorf("deleting run %s: %w", id, err)
	}
	return nil
}

// SweepEnded walks the created index (or the workflow's) in lex order of sortKey, oldest
// first, up to the last entry of a run created at or before p.EndedBefore, in one script.
func (s *Store) SweepEnded(ctx context.Context, p runner.SweepParams) (runner.SweepResult, error) {
	index := s.k.runsCreated()
	if p.WorkflowID != "" {
		index = s.k.runsByWorkflow(p.WorkflowID)
	}
	lower := "-"
	if p.After != nil {
		lower = "(" + sortKey(p.After.CreatedAt, p.After.ID)
	}
	// ';' follows ':' in byte order: every sortKey of the time sorts before ts(cut) + ";".
	upper := "(" + ts(p.EndedBefore) + ";"
	res, err := s.run(ctx, s.scripts.deleteRuns, nil, []string{index},
		s.k.p, "sweep", ts(p.EndedBefore), lower, upper, p.Limit)
	if err != nil {
		return runner.SweepResult{}, fmt.Errorf("sweeping ended runs: %w", err)
	}
	return sweepResult(res, p.Limit)
}

// sweepResult reads delete_runs' {deleted, examined, last entry} reply of a walk of limit
// entries: the walk goes on after a full one.
func sweepResult(res any, limit int) (runner.SweepResult, error) {
	reply, ok := res.([]any)
	if !ok || len(reply) != 3 {
		return runner.SweepResult{}, errors.New("sweeping ended runs: unexpected reply")
	}
	deleted, _ := reply[0].(int64)
	examined, _ := reply[1].(int64)
	last, _ := reply[2].(string)
	out := runner.SweepResult{Deleted: int(deleted)}
	if c, ok := runCursorOf(last); ok && int(examined) == limit {
		out.Next = &runner.RunKey{CreatedAt: time.Unix(0, c.CreatedAt).UTC(), ID: c.ID}
	}
	return out, nil
}

// Size is the memory the Redis server uses (INFO memory's used_memory), all its data
// included, not only this store's prefix: the gorunner_store_bytes gauge.
func (s *Store) Size(ctx context.Context) (int64, error) {
	info, err := s.rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("measuring the server: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("measuring the server: no used_memory in INFO memory")
}
