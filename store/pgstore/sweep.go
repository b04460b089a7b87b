package pgstore

import (
	"context"
	"fmt"
	"time"
)

// keySweepInterval is how often the store deletes expired idempotency keys. Every reader
// leaves them out and a claim at a scope's cap purges its own, so the sweep only frees the
// disk that keys of scopes under their cap would otherwise hold for ever.
const keySweepInterval = 10 * time.Minute

// sweepBatch bounds one sweep statement, so that the sweep never holds many row locks long.
const sweepBatch = 1_000

// startSweeping has the store sweep expired keys every keySweepInterval until Close. A
// failed sweep is left for the next one to finish. Every process sweeps: a batch another
// one is deleting is skipped (SKIP LOCKED).
func (s *Store) startSweeping() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.swept = cancel, make(chan struct{})
	go func() {
		defer close(s.swept)
		tick := time.NewTicker(keySweepInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				_, _ = s.sweepExpiredKeys(ctx, now)
			}
		}
	}()
}

// stopSweeping ends the sweeps and waits for the one under way, if any.
func (s *Store) stopSweeping() {
	if s.stop == nil {
		return
	}
	s.stop()
	<-s.swept
}

// sweepExpiredKeys deletes the idempotency keys expired at now, in every scope, at most
// sweepBatch per statement, and returns how many it deleted.
func (s *Store) sweepExpiredKeys(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		n, err := affected(s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys
			WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, nanos(now), sweepBatch))
		if err != nil {
			return total, fmt.Errorf("sweeping expired keys: %w", unreachable(ctx, err))
		}
		if total += int(n); n < sweepBatch {
			return total, nil
		}
	}
}
