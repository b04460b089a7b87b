package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/store/storecodec"
)

// inProgressExpiry is the expiry given to an in-progress key: it is what a LimitReached
// answer reports for such a key (a completed key gets its own ExpiresAt), and it lets an
// abandoned claim be purged eventually.
const inProgressExpiry = 24 * time.Hour

const keyCols = `scope, key, fingerprint, method, path, run_id, state, status, header, body, created_at, locked_until, expires_at`

// liveKey is the SQL condition for a key that counts against a scope's limit at ?1 (now):
// not expired, and not an abandoned in-progress claim. freeUpsertKey states its negation.
const liveKey = `expires_at > ?1 AND (state != 'in_progress' OR locked_until > ?1)`

func scanRecord(row scanner) (*idempotency.Record, error) {
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

// Claim takes a key in one write transaction: a live key is reported as Existing, an
// abandoned in-progress claim or an expired key is taken over, and the scope's limit is
// enforced (purging its expired keys, then refusing, or evicting the keys that expire first).
func (s *Store) Claim(ctx context.Context, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	var res idempotency.ClaimResult
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = claimKey(ctx, s.in(tx), p)
		return err
	})
	if err != nil {
		return idempotency.ClaimResult{}, fmt.Errorf("claiming key %q in %q: %w", p.Key, p.Scope, err)
	}
	return res, nil
}

func claimKey(ctx context.Context, q querier, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	return takeKey(ctx, q, p, &idempotency.Record{
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
}

// admitKey takes a free key with its answer already kept (an admission's one write): the
// key is never in progress.
func admitKey(ctx context.Context, q querier, kw *idempotency.KeyWrite) (idempotency.ClaimResult, error) {
	return takeKey(ctx, q, kw.Claim, kw.Answer)
}

// takeKey writes rec under p's key when the key is free: a live key is reported as
// Existing, a full scope as LimitReached. Every reader leaves expired keys out, so they
// are purged only where they would count: at the cap (makeRoom), or on every claim in a
// scope without one, which nothing else bounds. In a scope under its cap (the common case)
// the take is one conditional write, which takes a missing, expired or abandoned key and
// leaves a live one be (then read to report it): two statements fewer than reading the key
// first, on every fresh key's admission.
func takeKey(ctx context.Context, q querier, p idempotency.ClaimParams, rec *idempotency.Record) (idempotency.ClaimResult, error) {
	if p.Limit > 0 {
		stored, abandoned, err := scopeCounts(ctx, q, p.Scope)
		if err != nil {
			return idempotency.ClaimResult{}, err
		}
		if stored >= p.Limit {
			return takeKeyAtCap(ctx, q, p, rec, stored, abandoned)
		}
	} else if _, err := q.ExecContext(ctx, purgeExpired, nanos(p.Now), p.Scope); err != nil {
		return idempotency.ClaimResult{}, err
	}
	took, err := putFreeRecord(ctx, q, rec, p.Now)
	switch {
	case err != nil:
		return idempotency.ClaimResult{}, err
	case took:
		return idempotency.ClaimResult{Outcome: idempotency.Claimed, Record: rec}, nil
	}
	cur, err := scanRecord(q.QueryRowContext(ctx, `SELECT `+keyCols+` FROM idempotency_keys WHERE scope = ? AND key = ?`,
		p.Scope, p.Key))
	if err != nil {
		return idempotency.ClaimResult{}, err
	}
	return idempotency.ClaimResult{Outcome: idempotency.Existing, Record: cur}, nil
}

// takeKeyAtCap takes p's key in a scope storing its cap of keys or more (stored, abandoned
// are its scopeCounts): a live key is reported first; else makeRoom enforces the cap
// (purging, refusing or evicting), and the key's own expired or abandoned record is written
// over.
func takeKeyAtCap(ctx context.Context, q querier, p idempotency.ClaimParams, rec *idempotency.Record, stored, abandoned int) (idempotency.ClaimResult, error) {
	cur, err := scanRecord(q.QueryRowContext(ctx, `SELECT `+keyCols+` FROM idempotency_keys
		WHERE scope = ? AND key = ? AND expires_at > ?`, p.Scope, p.Key, nanos(p.Now)))
	switch {
	case err == nil && !cur.Abandoned(p.Now):
		return idempotency.ClaimResult{Outcome: idempotency.Existing, Record: cur}, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return idempotency.ClaimResult{}, err
	}
	oldest, full, err := makeRoom(ctx, q, p, stored, abandoned)
	if err != nil || full {
		return idempotency.ClaimResult{Outcome: idempotency.LimitReached, Oldest: oldest}, err
	}
	if err := putRecord(ctx, q, rec); err != nil {
		return idempotency.ClaimResult{}, err
	}
	return idempotency.ClaimResult{Outcome: idempotency.Claimed, Record: rec}, nil
}

// makeRoom enforces p.Limit for one new key in a scope storing its cap of keys or more. Its
// expired keys are purged first, and its live keys are the stored ones less its
// abandoned claims, both counted in idempotency_scopes (kept by triggers): the claims whose
// lock ended since the last check are marked abandoned first, each once, so no call reads
// the scope's keys or its abandoned claims, not even one refused at the cap. With
// EvictOldest the live keys that expire first are deleted until there is room; otherwise
// it reports full and when the oldest live key expires. stored and abandoned are the
// scope's scopeCounts, read by the caller in the same transaction, stored at p.Limit or
// more (takeKeyAtCap).
func makeRoom(ctx context.Context, q querier, p idempotency.ClaimParams, stored, abandoned int) (oldest time.Time, full bool, err error) {
	now := nanos(p.Now)
	purged, err := affected(q.ExecContext(ctx, purgeExpired, now, p.Scope))
	if err != nil {
		return time.Time{}, false, err
	}
	if purged > 0 {
		if stored, abandoned, err = scopeCounts(ctx, q, p.Scope); err != nil || stored < p.Limit {
			return time.Time{}, false, err
		}
	}
	marked, err := affected(q.ExecContext(ctx, markAbandoned, now, p.Scope))
	live := stored - abandoned - int(marked)
	if err != nil || live < p.Limit {
		return time.Time{}, false, err
	}
	if !p.EvictOldest {
		var first int64
		err = q.QueryRowContext(ctx, `SELECT expires_at FROM (`+oldestLiveKeys+`)`, now, p.Scope, 1).Scan(&first)
		return fromNanos(first), true, err
	}
	_, err = q.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM (`+oldestLiveKeys+`))`,
		now, p.Scope, live-p.Limit+1)
	return time.Time{}, false, err
}

// scopeCounts reads how many keys scope stores and how many of them are claims marked
// abandoned (none when the scope stores none).
func scopeCounts(ctx context.Context, q querier, scope string) (stored, abandoned int, err error) {
	err = q.QueryRowContext(ctx, `SELECT keys, abandoned FROM idempotency_scopes WHERE scope = ?`, scope).Scan(&stored, &abandoned)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	return stored, abandoned, err
}

// The queries of a scope at its cap (?1 now, ?2 scope, ?3 how many): each reads an index
// range as long as what it finds (purgeExpired: the keys it deletes, read in both parts of
// the expiry index, the claims marked abandoned and the other keys; markAbandoned: the
// claims it marks, each once), never the scope's keys nor its marked claims
// (TestCapQueriesReadNoScope). oldestLiveKeys runs after the purge and markAbandoned, which
// leave every key not marked live (liveKey only restates it), so it reads no abandoned
// claim however many expire before its live keys.
const (
	purgeExpired  = `DELETE FROM idempotency_keys WHERE scope = ?2 AND abandoned IN (0, 1) AND expires_at <= ?1`
	markAbandoned = `UPDATE idempotency_keys SET abandoned = 1
		WHERE scope = ?2 AND state = 'in_progress' AND abandoned = 0 AND locked_until <= ?1`
	oldestLiveKeys = `SELECT rowid, expires_at FROM idempotency_keys WHERE scope = ?2 AND abandoned = 0 AND ` + liveKey +
		` ORDER BY expires_at, key LIMIT ?3`
)

// Complete stores the answer of a key (State Done or Taken, ExpiresAt set). It writes the
// record even if the claim was purged meanwhile, so the answer still replays.
func (s *Store) Complete(ctx context.Context, r *idempotency.Record) error {
	if r.State != idempotency.StateDone && r.State != idempotency.StateTaken {
		return fmt.Errorf("completing key %q in %q: state %q is not done or taken", r.Key, r.Scope, r.State)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if err := putRecord(ctx, s.in(tx), r); err != nil {
			return fmt.Errorf("completing key %q in %q: %w", r.Key, r.Scope, err)
		}
		return nil
	})
}

// putRecord writes a key's record whole, over whatever the key held (a claim marked
// abandoned is one no more).
func putRecord(ctx context.Context, q querier, r *idempotency.Record) error {
	args, err := recordArgs(r)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, upsertKey, args...)
	return err
}

// putFreeRecord writes a key's record unless the key is live at now (see liveKey), and
// reports whether it did.
func putFreeRecord(ctx context.Context, q querier, r *idempotency.Record, now time.Time) (bool, error) {
	args, err := recordArgs(r)
	if err != nil {
		return false, err
	}
	var one int
	err = q.QueryRowContext(ctx, freeUpsertKey, append(args, nanos(now))...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// upsertKey writes a key's record whole (?1 to ?13, keyCols), over what the key held.
const upsertKey = `INSERT INTO idempotency_keys (` + keyCols + `)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
		ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, method = excluded.method,
			path = excluded.path, run_id = excluded.run_id,
			state = excluded.state, status = excluded.status, header = excluded.header,
			body = excluded.body, created_at = excluded.created_at,
			locked_until = excluded.locked_until, expires_at = excluded.expires_at, abandoned = 0`

// freeUpsertKey is upsertKey unless the key is live at ?14 (liveKey), that is where it is
// expired or an abandoned claim: the unqualified columns of a DO UPDATE's WHERE are the
// existing row's, all NOT NULL.
const freeUpsertKey = upsertKey + ` WHERE expires_at <= ?14 OR (state = 'in_progress' AND locked_until <= ?14) RETURNING 1`

// recordArgs are upsertKey's arguments for r.
func recordArgs(r *idempotency.Record) ([]any, error) {
	var header []byte
	if r.Header != nil {
		var err error
		if header, err = json.Marshal(r.Header); err != nil {
			return nil, fmt.Errorf("encoding header: %w", err)
		}
	}
	return []any{r.Scope, r.Key, r.Fingerprint, r.Method, r.Path, r.RunID, r.State, r.Status, header, r.Body,
		nanos(r.CreatedAt), nanos(r.LockedUntil), nanos(r.ExpiresAt)}, nil
}

// Release frees an in-progress key. A key already completed, or gone, is left as it is.
func (s *Store) Release(ctx context.Context, scope, key string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.in(tx).ExecContext(ctx, `DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND state = ?`,
			scope, key, idempotency.StateInProgress)
		if err != nil {
			return fmt.Errorf("releasing key %q in %q: %w", key, scope, err)
		}
		return nil
	})
}

// Get reads a key as it stands; missing or expired → idempotency.ErrNotFound.
func (s *Store) Get(ctx context.Context, scope, key string, now time.Time) (*idempotency.Record, error) {
	r, err := scanRecord(s.q().QueryRowContext(ctx, `SELECT `+keyCols+` FROM idempotency_keys
		WHERE scope = ? AND key = ? AND expires_at > ?`, scope, key, nanos(now)))
	if err != nil {
		return nil, fmt.Errorf("getting key %q in %q: %w", key, scope, mapErr(err, idempotency.ErrNotFound, nil))
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
			return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, unavailable(err))
		}
	}
	limit := limits.Page(p.Limit)
	rows, err := s.q().QueryContext(ctx, `SELECT scope, key, fingerprint, method, path, run_id, state,
			status, NULL, NULL, created_at, locked_until, expires_at
		FROM idempotency_keys WHERE scope = ? AND expires_at > ? AND (created_at, key) < (?, ?)
		ORDER BY created_at DESC, key DESC LIMIT ?`,
		p.Scope, nanos(p.Now), after.CreatedAt, after.Key, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, unavailable(err))
	}
	defer rows.Close()
	var recs []*idempotency.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, unavailable(err))
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, unavailable(err))
	}
	if len(recs) <= limit {
		return recs, "", nil
	}
	recs = recs[:limit]
	last := recs[limit-1]
	next, err := storecodec.EncodeCursor(keyCursor{CreatedAt: nanos(last.CreatedAt), Key: last.Key})
	return recs, next, err
}
