package idempotency

import (
	"context"
	"fmt"
)

// Keys returns a page of scope's live keys, newest first, without their kept answers, and
// the cursor of the next page (empty on the last). A bad cursor → ErrInvalidCursor.
func (s *Service) Keys(ctx context.Context, scope, cursor string, limit int) ([]*Record, string, error) {
	recs, next, err := s.store.List(ctx, ListParams{Scope: scope, Now: s.cfg.Now(), Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", fmt.Errorf("listing idempotency keys: %w", err)
	}
	return recs, next, nil
}

// Key returns one live key of scope with its kept answer in the clear; missing or expired →
// ErrNotFound. A kept answer sealed under another secret key is shown as a replay answers
// it: the key taken, without its answer.
func (s *Service) Key(ctx context.Context, scope, key string) (*Record, error) {
	rec, err := s.store.Get(ctx, scope, key, s.cfg.Now())
	if err != nil || rec.State != StateDone {
		return rec, err
	}
	if rec.Body, err = s.openBody(rec); err != nil {
		rec.State, rec.Header, rec.Body = StateTaken, nil, nil
	}
	return rec, nil
}
