package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/runner"
)

// ClaimToken gives h.Token in h.Environment to h.RunID. The claim is an INSERT that the
// (environment, token) primary key refuses when the token is owned; the owner is then read.
func (s *Store) ClaimToken(ctx context.Context, h *runner.Hook) error {
	return unreachable(ctx, claimToken(ctx, s.pool, h))
}

func claimToken(ctx context.Context, q querier, h *runner.Hook) error {
	n, err := affected(q.Exec(ctx, `INSERT INTO hooks (environment, token, run_id, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (environment, token) DO NOTHING`,
		h.Environment, h.Token, h.RunID, nanos(h.CreatedAt)))
	if err != nil || n == 1 {
		return wrapClaim(h, err)
	}
	return checkToken(ctx, q, h)
}

// checkToken refuses h when another run owns its token: *runner.TokenConflictError.
func checkToken(ctx context.Context, q querier, h *runner.Hook) error {
	var owner string
	err := q.QueryRow(ctx, `SELECT run_id FROM hooks WHERE environment = $1 AND token = $2`,
		h.Environment, h.Token).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && owner == h.RunID) {
		return nil
	}
	if err != nil {
		return wrapClaim(h, err)
	}
	return &runner.TokenConflictError{Environment: h.Environment, Token: h.Token, OwnerRunID: owner}
}

func wrapClaim(h *runner.Hook, err error) error {
	if err != nil {
		return fmt.Errorf("claiming token %q: %w", h.Token, err)
	}
	return nil
}

// GetHook returns the active owner of a token; none → runner.ErrNotFound.
func (s *Store) GetHook(ctx context.Context, env, token string) (*runner.Hook, error) {
	h := runner.Hook{Environment: env, Token: token}
	var created int64
	err := s.pool.QueryRow(ctx, `SELECT run_id, created_at FROM hooks WHERE environment = $1 AND token = $2`,
		env, token).Scan(&h.RunID, &created)
	if err != nil {
		return nil, fmt.Errorf("getting hook %q: %w", token, mapErr(ctx, err, runner.ErrNotFound, nil))
	}
	h.CreatedAt = fromNanos(created)
	return &h, nil
}

// EnqueuePayload queues payload for the owner of a token and makes that run due at now.
// No active owner → runner.ErrNotFound. The hook's row is locked, so that the run's end
// (which deletes its hooks, then its payloads) cannot leave the payload behind.
func (s *Store) EnqueuePayload(ctx context.Context, env, token string, payload json.RawMessage, now time.Time) (string, error) {
	var runID string
	err := s.write(ctx, func(q querier) error {
		err := q.QueryRow(ctx, `SELECT run_id FROM hooks WHERE environment = $1 AND token = $2 FOR UPDATE`,
			env, token).Scan(&runID)
		if err != nil {
			return mapErr(ctx, err, runner.ErrNotFound, nil)
		}
		_, err = q.Exec(ctx, `INSERT INTO payloads (environment, token, run_id, payload, created_at)
			VALUES ($1, $2, $3, $4, $5)`, env, token, runID, []byte(payload), nanos(now))
		if err != nil {
			return err
		}
		_, err = wakeRun(ctx, q, runID, now)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("queueing payload for %q: %w", token, err)
	}
	return runID, nil
}

// NextPayload returns the oldest payload queued for runID on a token; none →
// runner.ErrNotFound.
func (s *Store) NextPayload(ctx context.Context, runID, env, token string) (*runner.Payload, error) {
	var p runner.Payload
	err := s.pool.QueryRow(ctx, `SELECT seq, payload FROM payloads
		WHERE run_id = $1 AND environment = $2 AND token = $3 ORDER BY seq LIMIT 1`,
		runID, env, token).Scan(&p.Seq, &p.Payload)
	if err != nil {
		return nil, fmt.Errorf("next payload for %q: %w", token, mapErr(ctx, err, runner.ErrNotFound, nil))
	}
	return &p, nil
}

// MissAsk counts one more answer to the question of the hook step at index step of runID
// that did not fit, in one UPDATE: a count kept for another step starts again at 1.
// Unknown → runner.ErrNotFound; ended → runner.ErrFinished.
func (s *Store) MissAsk(ctx context.Context, runID string, step int) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `UPDATE runs
		SET ask_misses = CASE WHEN ask_step = $1 THEN ask_misses + 1 ELSE 1 END, ask_step = $1
		WHERE id = $2 AND `+notTerminal+` RETURNING ask_misses`, step, runID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		err = finishedOrMissing(ctx, s.pool, runID)
	}
	if err != nil {
		return 0, fmt.Errorf("counting an answer to run %s: %w", runID, unreachable(ctx, err))
	}
	return n, nil
}
