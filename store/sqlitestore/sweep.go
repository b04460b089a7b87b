package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// keySweepInterval is how often the store deletes expired idempotency keys. Every reader
// leaves them out and a claim at a scope's cap purges its own, so the sweep only frees the
// disk that keys of scopes under their cap would otherwise hold for ever.
const keySweepInterval = 10 * time.Minute

// sweepBatch bounds one sweep transaction: at most this many scopes looked at and this many
// expired keys deleted, so that the sweep never holds the write lock long.
const sweepBatch = 256

// The sweep's statements: a page of scopes from ?1 on (?2 of them), and a batch of one
// scope's expired keys (?1 now, ?2 scope, ?3 how many), read in the expiry index as
// purgeExpired reads it.
const (
	sweepScopes   = `SELECT scope FROM idempotency_scopes WHERE scope >= ?1 ORDER BY scope LIMIT ?2`
	sweepExpiring = `DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys
		WHERE scope = ?2 AND abandoned IN (0, 1) AND expires_at <= ?1 LIMIT ?3)`
)

// startSweeping has the store sweep expired keys every keySweepInterval until
// stopSweeping. A failed sweep is left for the next one to finish.
func (s *Store) startSweeping() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopSweep, s.swept = cancel, make(chan struct{})
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
	if s.stopSweep == nil {
		return
	}
	s.stopSweep()
	<-s.swept
}

// sweepExpiredKeys deletes the idempotency keys expired at now, in every scope, in
// transactions of at most sweepBatch keys, and returns how many it deleted.
func (s *Store) sweepExpiredKeys(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for from, more := "", true; more; {
		var n int
		var next string
		err := s.write(ctx, func(tx *sql.Tx) error {
			var err error
			n, next, more, err = sweepKeys(ctx, s.in(tx), now, from, sweepBatch)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("sweeping expired keys from scope %q: %w", from, err)
		}
		total, from = total+n, next
	}
	return total, nil
}

// sweepKeys deletes at most batch keys expired at now, of at most batch scopes from scope
// from on, and reports how many it deleted and, with more, the scope to go on from.
func sweepKeys(ctx context.Context, q querier, now time.Time, from string, batch int) (deleted int, next string, more bool, err error) {
	scopes, err := scopesFrom(ctx, q, from, batch)
	if err != nil {
		return 0, "", false, err
	}
	for _, scope := range scopes {
		n, err := affected(q.ExecContext(ctx, sweepExpiring, nanos(now), scope, batch-deleted))
		if err != nil {
			return 0, "", false, err
		}
		if deleted += int(n); deleted == batch {
			return deleted, scope, true, nil
		}
	}
	if len(scopes) < batch {
		return deleted, "", false, nil
	}
	// The least string after the page's last scope.
	return deleted, scopes[len(scopes)-1] + "\x00", true, nil
}

// scopesFrom reads up to n scopes that store keys, from scope from on, in order.
func scopesFrom(ctx context.Context, q querier, from string, n int) ([]string, error) {
	rows, err := q.QueryContext(ctx, sweepScopes, from, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var scopes []string
	for rows.Next() {
		var scope string
		if err := rows.Scan(&scope); err != nil {
			return nil, err
		}
		scopes = append(scopes, scope)
	}
	return scopes, rows.Err()
}
