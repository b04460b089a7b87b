package idempotency

import (
	"context"
	"encoding/json"
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

// Key returns one live key of scope with its kept answer; missing or expired → ErrNotFound.
func (s *Service) Key(ctx context.Context, scope, key string) (*Record, error) {
	return s.store.Get(ctx, scope, key, s.cfg.Now())
}

// runIDOf finds the run an answer names, so that a key's run is known even when its body
// is too big to keep: a run answer {"data": {"id", "workflowId", …}} or an answer that
// names one, {"data": {"runId": …}} (a hook resume, a webhook).
func runIDOf(body []byte) string {
	var answer struct {
		Data struct {
			ID         string `json:"id"`
			WorkflowID string `json:"workflowId"`
			RunID      string `json:"runId"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &answer) != nil {
		return ""
	}
	if answer.Data.RunID != "" {
		return answer.Data.RunID
	}
	if answer.Data.WorkflowID != "" {
		return answer.Data.ID
	}
	return ""
}
