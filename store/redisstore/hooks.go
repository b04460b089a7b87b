package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gorunner/gorunner/runner"
)

// ClaimToken gives h.Token in h.Environment to h.RunID, atomically: the owner is read and
// the token written by one script.
func (s *Store) ClaimToken(ctx context.Context, h *runner.Hook) error {
	_, err := s.run(ctx, s.scripts.claimToken, nil,
		[]string{s.k.hook(h.Environment, h.Token), s.k.runHooks(h.RunID)},
		h.RunID, ts(h.CreatedAt), hookMember(h.Environment, h.Token))
	if err != nil {
		return fmt.Errorf("claiming token %q: %w", h.Token, tokenConflict(err, h))
	}
	return nil
}

// GetHook returns the active owner of a token; none → runner.ErrNotFound.
func (s *Store) GetHook(ctx context.Context, env, token string) (*runner.Hook, error) {
	vals, err := s.rdb.HMGet(ctx, s.k.hook(env, token), "run_id", "created_at").Result()
	if err == nil && vals[0] == nil {
		err = runner.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("getting hook %q: %w", token, err)
	}
	runID, _ := vals[0].(string)
	created, _ := vals[1].(string)
	at, err := parseTS(created)
	if err != nil {
		return nil, fmt.Errorf("getting hook %q: %w", token, err)
	}
	return &runner.Hook{Environment: env, Token: token, RunID: runID, CreatedAt: at}, nil
}

// EnqueuePayload queues payload for the owner of a token and makes that run due at now.
// No active owner → runner.ErrNotFound.
func (s *Store) EnqueuePayload(ctx context.Context, env, token string, payload json.RawMessage, now time.Time) (string, error) {
	k := s.k
	res, err := s.run(ctx, s.scripts.enqueuePayload, runnerErrs,
		[]string{k.hook(env, token), k.queue(env, token), k.payloadSeq(), k.runsDue()},
		[]byte(payload), ts(now), hookMember(env, token), k.runPrefix(), k.payloadsPrefix())
	if err != nil {
		return "", fmt.Errorf("queueing payload for %q: %w", token, err)
	}
	owner, _ := res.(string)
	return owner, nil
}

// NextPayload returns the oldest payload queued for runID on a token; none →
// runner.ErrNotFound.
func (s *Store) NextPayload(ctx context.Context, runID, env, token string) (*runner.Payload, error) {
	res, err := s.run(ctx, s.scripts.nextPayload, nil, []string{s.k.queue(env, token), s.k.payloads(runID)})
	pair := replyStrings(res)
	if err == nil && len(pair) != 2 {
		err = runner.ErrNotFound
	}
	var seq int64
	if err == nil {
		seq, err = strconv.ParseInt(pair[0], 10, 64)
	}
	if err != nil {
		return nil, fmt.Errorf("next payload for %q: %w", token, err)
	}
	return &runner.Payload{Seq: seq, Payload: json.RawMessage(pair[1])}, nil
}

// MissAsk counts one more answer to the question of the hook step at index step of runID
// that did not fit, in one script on the run's hash (fields ask_step and ask_misses, which
// no other script writes): a count kept for another step starts again at 1. Unknown →
// runner.ErrNotFound; ended → runner.ErrFinished.
func (s *Store) MissAsk(ctx context.Context, runID string, step int) (int, error) {
	res, err := s.run(ctx, s.scripts.missAsk, runnerErrs, []string{s.k.run(runID)}, step)
	if err != nil {
		return 0, fmt.Errorf("counting an answer to run %s: %w", runID, err)
	}
	n, _ := res.(int64)
	return int(n), nil
}
