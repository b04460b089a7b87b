package runner

import (
	"context"
	"fmt"
)

// WakeSignal carries "a run may be due now" between processes that share a store (Redis
// pub/sub implements it), so a run admitted, resumed or woken on one process is claimed
// at once by an idle worker on any. Delivery may be lossy: every engine also polls the
// store every PollInterval, so a lost signal costs latency, never a run.
type WakeSignal interface {
	// Publish announces that a run was made due.
	Publish(ctx context.Context) error
	// Subscribe delivers a value per announcement (by any process, this one included)
	// until ctx ends or the subscription breaks; then the channel is closed.
	Subscribe(ctx context.Context) (<-chan struct{}, error)
}

// startSignal subscribes to Config.WakeSignal and starts the loops that claim on a signal
// and publish this engine's wake-ups, until ctx ends.
func (e *Engine) startSignal(ctx context.Context) error {
	sig := e.cfg.WakeSignal
	if sig == nil {
		return nil
	}
	heard, err := sig.Subscribe(ctx)
	if err != nil {
		return fmt.Errorf("subscribing to run wake-ups: %w", err)
	}
	go func() {
		for range heard {
			e.pokeLocal()
		}
	}()
	go e.publishWakes(ctx, sig)
	return nil
}

// publishWakes publishes the wake-ups of this engine, coalesced: one message tells every
// process to look, however many runs became due meanwhile.
func (e *Engine) publishWakes(ctx context.Context, sig WakeSignal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.shout:
		}
		if err := sig.Publish(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("publishing a run wake-up failed; other processes find the run by polling", "err", err)
		}
	}
}
