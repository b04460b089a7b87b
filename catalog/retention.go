package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gorunner/gorunner/schemas"
)

// retentionPage is how many workflows ShorterRetention reads at a time.
const retentionPage = 100

// ShorterRetention gives the workflows whose definition (the draft, as saved) sets a
// `retention`, by ID: runner.Sweeper deletes their ended runs, of every version, that much
// after their end when it is shorter than the server's.
func (s *Service) ShorterRetention(ctx context.Context) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	cursor := ""
	for {
		page, next, err := s.store.ListWorkflows(ctx, ListWorkflowsParams{Page: Page{Limit: retentionPage, Cursor: cursor}})
		if err != nil {
			return nil, fmt.Errorf("listing workflows' retention: %w", err)
		}
		for _, w := range page {
			var def struct {
				Retention schemas.Retention `json:"retention"`
			}
			// A definition is stored checked: one that does not read keeps the server's.
			if json.Unmarshal(w.Definition, &def) == nil && def.Retention > 0 {
				out[w.ID] = def.Retention.Std()
			}
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}
