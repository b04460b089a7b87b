package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/store/storecodec"
)

// inProgressExpiry is the expiry given to an in-progress key: it is what a LimitReached
// answer reports for such a key (a completed key gets its own ExpiresAt), and it lets an
// abandoned claim be purged eventually.
const inProgressExpiry = 24 * time.Hour

const keyCols = `scope, key, fingerprint, method, path, run_id, state, status, header, body, created_at, locked_until, expires_at`

// liveKey is the SQL condition for a key that counts against a scope's limit at $1 (now):
// not expired, and not an abandoned in-progress claim.
const liveKey = `expires_at > $1 AND (state != 'in_progress' OR locked_until > $1)`

func scanRecord(row pgx.Row) (*idempotency.Record, error) {
	var r idempotency.Record
	var header []byte
	var created, locked, expires int64
	err := row.Scan(&r.Scope, &r.Key, &r.Fingerprint, &r.Method, &r.Path, &r.RunID, &r.State, &r.Status, &header, &r.Body,
		&created, &locked, &expires)
	if err != nil {
		return nil, err
	}
	h, err := storecodec.UnmarshalOrNil[http.Header](header)
	if err != nil {
		return nil, fmt.Errorf("decoding header: %w", err)
	}
	if h != nil {
		r.Header = *h
	}
	r.CreatedAt, r.LockedUntil, r.ExpiresAt = fromNanos(created), fromNanos(locked), fromNanos(expires)
	return &r, nil
}

// Claim takes a key in one transaction: a live key is reported as Existing, an abandoned
// in-progress claim or an expired key is taken over, and the scope's limit is enforced
// (purging its expired keys, then refusing, or evicting the keys that expire first).
func (s *Store) Claim(ctx context.Context, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	var res idempotency.ClaimResult
	err := s.write(ctx, func(q querier) error {
		var err error
		res, err = s.takeKey(ctx, q, p, &idempotency.Record{
			Scope:       p.Scope,
			Key:         p.Key,
			Fingerprint: p.Fingerprint,
			Method:      p.Method,
			Path:        p.Path,
			State:       idempotency.StateInProgress,
			CreatedAt:   p.Now.UTC(),
			LockedUntil: p.Now.Add(p.LockTTL).UTC(),
			ExpiresAt:   p.Now.Add(inProgressExpiry).UTC(),
		})
		return err
	})
	if err != nil {
		return idempotency.ClaimResult{}, fmt.Errorf("claiming key %q in %q: %w", p.Key, p.Scope, err)
	}
	return res, nil
}

// takeKey writes rec under p's key when the key is free: a live key is reported as
// Existing, a full scope as LimitReached. A scope with a cap is locked for the
// transaction (an advisory lock keyed by schema and scope), so that two claims cannot
// both take its last free place; in a scope under its cap (its stored keys, counted by a
// trigger, below it) the take is one conditional upsert, which takes a missing, expired or
// abandoned key and leaves a live one be (then read to report it). Expired keys are purged
// where they would count, at the cap, and on every claim in a scope without one, which
// nothing else bounds.
func (s *Store) takeKey(ctx context.Context, q querier, p idempotency.ClaimParams, rec *idempotency.Record) (idempotency.ClaimResult, error) {
	if p.Limit > 0 {
		stored, err := s.lockScope(ctx, q, p.Scope)
		if err != nil {
			return idempotency.ClaimResult{}, err
		}
		if stored >= int64(p.Limit) {
			return takeKeyAtCap(ctx, q, p, rec)
		}
	} else if _, err := q.Exec(ctx, purgeExpired, nanos(p.Now), p.Scope); err != nil {
		return idempotency.ClaimResult{}, err
	}
	took, err := putFreeRecord(ctx, q, rec, p.Now)
	switch {
	case err != nil:
		return idempotency.ClaimResult{}, err
	case took:
		return idempotency.ClaimResult{Outcome: idempotency.Claimed, Record: rec}, nil
	}
	cur, err := scanRecord(q.QueryRow(ctx, `SELECT `+keyCols+` FROM idempotency_keys WHERE scope = $1 AND key = $2`,
		p.Scope, p.Key))
	if err != nil {
		return idempotency.ClaimResult{}, err
	}
	return idempotency.ClaimResult{Outcome: idempotency.Existing, Record: cur}, nil
}

// lockScope takes the transaction's lock on scope and reads how many keys it stores.
func (s *Store) lockScope(ctx context.Context, q querier, scope string) (int64, error) {
	var stored int64
	err := q.QueryRow(ctx, `SELECT coalesce((SELECT keys FROM idempotency_scopes WHERE scope = $2), 0)
		FROM (SELECT pg_advisory_xact_lock(hashtextextended($1, 0))) AS locked`,
		"gorunner.idempotency."+s.schema+"."+scope, scope).Scan(&stored)
	return stored, err
}

// takeKeyAtCap takes p's key in a scope storing its cap of keys or more: a live key is
// reported first; else makeRoom enforces the cap (purging, refusing or evicting), and the
// key's own expired or abandoned record is written over.
func takeKeyAtCap(ctx context.Context, q querier, p idempotency.ClaimParams, rec *idempotency.Record) (idempotency.ClaimResult, error) {
	cur, err := scanRecord(q.QueryRow(ctx, `SELECT `+keyCols+` FROM idempotency_keys
		WHERE scope = $1 AND key = $2 AND expires_at > $3`, p.Scope, p.Key, nanos(p.Now)))
	switch {
	case err == nil && !cur.Abandoned(p.Now):
		return idempotency.ClaimResult{Outcome: idempotency.Existing, Record: cur}, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return idempotency.ClaimResult{}, err
	}
	oldest, full, err := makeRoom(ctx, q, p)
	if err != nil || full {
		return idempotency.ClaimResult{Outcome: idempotency.LimitReached, Oldest: oldest}, err
	}
	if err := putRecord(ctx, q, rec); err != nil {
		return idempotency.ClaimResult{}, err
	}
	return idempotency.ClaimResult{Outcome: idempotency.Claimed, Record: rec}, nil
}

// makeRoom enforces p.Limit for one new key in a scope storing its cap of keys or more:
// its expired keys are purged and its live keys counted (p's own key is not live: the
// caller checked). With EvictOldest the live keys that expire first are deleted until
// there is room; otherwise it reports full and when the oldest live key expires.
func makeRoom(ctx context.Context, q querier, p idempotency.ClaimParams) (oldest time.Time, full bool, err error) {
	now := nanos(p.Now)
	if _, err := q.Exec(ctx, purgeExpired, now, p.Scope); err != nil {
		return time.Time{}, false, err
	}
	var live int
	var first *int64
	err = q.QueryRow(ctx, `SELECT COUNT(*), MIN(expires_at) FROM idempotency_keys WHERE scope = $2 AND `+liveKey,
		now, p.Scope).Scan(&live, &first)
	if err != nil || live < p.Limit {
		return time.Time{}, false, err
	}
	if !p.EvictOldest {
		return fromNanos(*first), true, nil
	}
	_, err = q.Exec(ctx, `DELETE FROM idempotency_keys WHERE (scope, key) IN (SELECT scope, key FROM idempotency_keys
		WHERE scope = $2 AND `+liveKey+` ORDER BY expires_at, key LIMIT $3)`, now, p.Scope, live-p.Limit+1)
	return time.Time{}, false, err
}

// purgeExpired deletes a scope's keys expired at $1 ($2 the scope).
const purgeExpired = `DELETE FROM idempotency_keys WHERE scope = $2 AND expires_at <= $1`

// Complete stores the answer of a key (State Done or Taken, ExpiresAt set). It writes the
// record even if the claim was purged meanwhile, so the answer still replays.
func (s *Store) Complete(ctx context.Context, r *idempotency.Record) error {
	if r.State != idempotency.StateDone && r.State != idempotency.StateTaken {
		return fmt.Errorf("completing key %q in %q: state %q is not done or taken", r.Key, r.Scope, r.State)
	}
	if err := putRecord(ctx, s.pool, r); err != nil {
		return fmt.Errorf("completing key %q in %q: %w", r.Key, r.Scope, unreachable(ctx, err))
	}
	return nil
}

// putRecord writes a key's record whole, over whatever the key held.
func putRecord(ctx context.Context, q querier, r *idempotency.Record) error {
	args, err := recordArgs(r)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, upsertKey, args...)
	return err
}

// putFreeRecord writes a key's record unless the key is live at now (see liveKey), and
// reports whether it did. A concurrent claim of the same key waits for this one's
// transaction, then finds the key live.
func putFreeRecord(ctx context.Context, q querier, r *idempotency.Record, now time.Time) (bool, error) {
	args, err := recordArgs(r)
	if err != nil {
		return false, err
	}
	var one int
	err = q.QueryRow(ctx, freeUpsertKey, append(args, nanos(now))...).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// upsertKey writes a key's record whole ($1 to $13, keyCols), over what the key held.
const upsertKey = `INSERT INTO idempotency_keys AS k (` + keyCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, method = excluded.method,
			path = excluded.path, run_id = excluded.run_id,
			state = excluded.state, status = excluded.status, header = excluded.header,
			body = excluded.body, created_at = excluded.created_at,
			locked_until = excluded.locked_until, expires_at = excluded.expires_at`

// freeUpsertKey is upsertKey unless the key held is live at $14 (liveKey).
const freeUpsertKey = upsertKey + ` WHERE k.expires_at <= $14 OR (k.state = 'in_progress' AND k.locked_until <= $14) RETURNING 1`

// recordArgs are upsertKey's arguments for r.
func recordArgs(r *idempotency.Record) ([]any, error) {
	var header []byte
	if r.Header != nil {
		var err error
		if header, err = json.Marshal(r.Header); err != nil {
			return nil, fmt.Errorf("encoding header: %w", err)
		}
	}
	return []any{r.Scope, r.Key, r.Fingerprint, r.Method, r.Path, r.RunID, string(r.State), r.Status, header, r.Body,
		nanos(r.CreatedAt), nanos(r.LockedUntil), nanos(r.ExpiresAt)}, nil
}

// Release frees an in-progress key. A key already completed, or gone, is left as it is.
func (s *Store) Release(ctx context.Context, scope, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND state = $3`,
		scope, key, string(idempotency.StateInProgress))
	if err != nil {
		return fmt.Errorf("releasing key %q in %q: %w", key, scope, unreachable(ctx, err))
	}
	return nil
}

// Get reads a key as it stands; missing or expired → idempotency.ErrNotFound.
func (s *Store) Get(ctx context.Context, scope, key string, now time.Time) (*idempotency.Record, error) {
	r, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM idempotency_keys
		WHERE scope = $1 AND key = $2 AND expires_at > $3`, scope, key, nanos(now)))
	if err != nil {
		return nil, fmt.Errorf("getting key %q in %q: %w", key, scope, mapErr(ctx, err, idempotency.ErrNotFound, nil))
	}
	return r, nil
}

// keyCursor is the sort key a page of keys ends at.
type keyCursor struct {
	CreatedAt int64  `json:"c"`
	Key       string `json:"k"`
}

// List returns a page of a scope's live keys, newest first, without header and body.
func (s *Store) List(ctx context.Context, p idempotency.ListParams) ([]*idempotency.Record, string, error) {
	after := keyCursor{CreatedAt: math.MaxInt64}
	if p.Cursor != "" {
		if err := storecodec.DecodeCursor(p.Cursor, &after, idempotency.ErrInvalidCursor); err != nil {
			return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, err)
		}
	}
	limit := limits.Page(p.Limit)
	rows, err := s.pool.Query(ctx, `SELECT scope, key, fingerprint, method, path, run_id, state,
			status, NULL::bytea, NULL::bytea, created_at, locked_until, expires_at
		FROM idempotency_keys WHERE scope = $1 AND expires_at > $2 AND (created_at, key) < ($3, $4)
		ORDER BY created_at DESC, key DESC LIMIT $5`,
		p.Scope, nanos(p.Now), after.CreatedAt, after.Key, limit+1)
	var recs []*idempotency.Record
	if err == nil {
		recs, err = collect(rows, scanRecord)
	}
	if err != nil {
		return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, unreachable(ctx, err))
	}
	if len(recs) <= limit {
		return recs, "", nil
	}
	recs = recs[:limit]
	last := recs[limit-1]
	next, err := storecodec.EncodeCursor(keyCursor{CreatedAt: nanos(last.CreatedAt), Key: last.Key})
	return recs, next, err
}
