package runner

import (
	"context"

	"github.com/gorunner/gorunner/events"
)

// MissAsk counts one more answer to the question of the hook step at index step of run id
// that did not fit (Store.MissAsk) and returns the count for that step. The run's change
// is published as a save's is, so that every process following the run (waits, watches,
// MCP task views) reads the new count.
func (e *Engine) MissAsk(ctx context.Context, id string, step int) (int, error) {
	n, err := e.store.MissAsk(ctx, id, step)
	if err != nil {
		return 0, err
	}
	e.cfg.Events.Publish(events.Run(id))
	return n, nil
}
