package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/store/storecodec"
)

// inProgressExpiry is the expiry given to an in-progress key, as in sqlitestore: what a
// LimitReached answer reports for such a key, and when an abandoned claim is purged.
const inProgressExpiry = 24 * time.Hour

// minKeyTTL keeps a just-answered key in Redis even when its life is already over by the
// caller's clock; the stored expiry decides, the TTL only collects garbage.
const minKeyTTL = time.Second

func decodeRecord(scope string, m map[string]string) (*idempotency.Record, error) {
	f := &fields{m: m}
	r := &idempotency.Record{
		Scope: scope, Key: f.str("key"), Fingerprint: f.str("fingerprint"), Method: f.str("method"), Path: f.str("path"),
		RunID: f.str("run_id"), State: idempotency.State(f.str("state")),
		Status: f.int("status"), Body: f.bytes("body"), CreatedAt: f.time("created_at"),
		LockedUntil: f.time("locked_until"), ExpiresAt: f.time("expires_at"),
	}
	h, err := storecodec.UnmarshalOrNil[http.Header](f.bytes("header"))
	if err != nil {
		return nil, fmt.Errorf("decoding header: %w", err)
	}
	if h != nil {
		r.Header = *h
	}
	return r, f.err
}

// keyKeys are a key's record and its scope's indexes (lib.lua describes them).
func (s *Store) keyKeys(scope, key string) []string {
	return append([]string{s.k.idemRecord(scope, key)}, s.scopeIndexes(scope)...)
}

// scopeIndexes are a scope's key indexes: by expiry, by lock, by creation, and its
// abandoned claims.
func (s *Store) scopeIndexes(scope string) []string {
	return []string{s.k.idemExpiries(scope), s.k.idemLocks(scope), s.k.idemCreated(scope), s.k.idemDead(scope)}
}

// Claim takes a key in one script: a batch of the scope's expired keys is purged, a live
// key is reported as Existing, an abandoned in-progress claim is taken over, and the
// scope's limit is enforced (refusing, or evicting the keys that expire first). At the cap
// the script reads a constant number of index entries besides those it frees or sets
// apart (abandoned claims, each once): the live keys are counted, never read.
func (s *Store) Claim(ctx context.Context, p idempotency.ClaimParams) (idempotency.ClaimResult, error) {
	locked, expires := p.Now.Add(p.LockTTL), p.Now.Add(inProgressExpiry)
	res, err := s.run(ctx, s.scripts.claimKey, nil, s.keyKeys(p.Scope, p.Key),
		ts(p.Now), score(p.Now), p.Key, p.Fingerprint, ts(locked), score(locked), ts(expires), score(expires),
		p.Limit, boolArg(p.EvictOldest), s.k.idemPrefix(p.Scope), inProgressExpiry.Milliseconds(), p.Method, p.Path)
	if err != nil {
		return idempotency.ClaimResult{}, fmt.Errorf("claiming key %q in %q: %w", p.Key, p.Scope, err)
	}
	return s.claimResult(res, p, &idempotency.Record{
		Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint, Method: p.Method, Path: p.Path,
		State:     idempotency.StateInProgress,
		CreatedAt: p.Now.UTC(), LockedUntil: locked.UTC(), ExpiresAt: expires.UTC(),
	})
}

// Complete stores the answer of a key (State Done or Taken, ExpiresAt set). It writes the
// record even if the claim was purged meanwhile, so the answer still replays.
func (s *Store) Complete(ctx context.Context, r *idempotency.Record) error {
	if r.State != idempotency.StateDone && r.State != idempotency.StateTaken {
		return fmt.Errorf("completing key %q in %q: state %q is not done or taken", r.Key, r.Scope, r.State)
	}
	fields, err := recordFields(r)
	if err != nil {
		return fmt.Errorf("completing key %q in %q: %w", r.Key, r.Scope, err)
	}
	args := append([]any{r.Key, score(r.ExpiresAt), keptTTL(r).Milliseconds(), score(r.CreatedAt), s.k.idemPrefix(r.Scope)}, fields...)
	_, err = s.run(ctx, s.scripts.completeKey, nil, s.keyKeys(r.Scope, r.Key), args...)
	return wrapErr(fmt.Sprintf("completing key %q in %q", r.Key, r.Scope), err)
}

// recordFields are the hash fields and values of a kept answer's record.
func recordFields(r *idempotency.Record) ([]any, error) {
	header := ""
	if r.Header != nil {
		b, err := json.Marshal(r.Header)
		if err != nil {
			return nil, fmt.Errorf("encoding header: %w", err)
		}
		header = string(b)
	}
	return []any{"key", r.Key, "fingerprint", r.Fingerprint, "method", r.Method, "path", r.Path, "run_id", r.RunID,
		"state", string(r.State), "status", r.Status,
		"header", header, "body", r.Body, "created_at", ts(r.CreatedAt), "locked_until", ts(time.Time{}),
		"expires_at", ts(r.ExpiresAt)}, nil
}

// keptTTL is how long Redis holds a kept answer's record: its life, at least minKeyTTL.
func keptTTL(r *idempotency.Record) time.Duration {
	return max(r.ExpiresAt.Sub(r.CreatedAt), minKeyTTL)
}

// admitKeyArgs are create_run's arguments for a key admitted with its answer: their count,
// then the arguments.
func (s *Store) admitKeyArgs(kw *idempotency.KeyWrite) ([]any, error) {
	if kw == nil {
		return []any{0}, nil
	}
	p, r := kw.Claim, kw.Answer
	fields, err := recordFields(r)
	if err != nil {
		return nil, err
	}
	args := append([]any{s.k.idemPrefix(p.Scope), ts(p.Now), score(p.Now), p.Key, p.Limit, boolArg(p.EvictOldest),
		keptTTL(r).Milliseconds(), score(r.ExpiresAt), score(r.CreatedAt)}, fields...)
	return append([]any{len(args)}, args...), nil
}

// claimResult reads a claim_key or create_run reply for the key p claims; rec is the
// record written when the key was taken.
//
// A claim's or a refusal's reply ends with how many index entries the check read, which
// only the tests' keyReads hears.
func (s *Store) claimResult(reply any, p idempotency.ClaimParams, rec *idempotency.Record) (idempotency.ClaimResult, error) {
	out, _ := reply.([]any)
	var outcome string
	if len(out) > 0 {
		outcome, _ = out[0].(string)
	}
	if s.keyReads != nil && len(out) > 1 && (outcome == "claimed" || outcome == "limit") {
		n, _ := out[len(out)-1].(int64)
		s.keyReads(n)
	}
	switch {
	case outcome == "claimed":
		return idempotency.ClaimResult{Outcome: idempotency.Claimed, Record: rec}, nil
	case outcome == "existing":
		rec, err := decodeRecord(p.Scope, flatMap(out[1:]))
		return idempotency.ClaimResult{Outcome: idempotency.Existing, Record: rec}, err
	case outcome == "limit" && len(out) > 1:
		oldest, err := parseTS(fmt.Sprint(out[1]))
		return idempotency.ClaimResult{Outcome: idempotency.LimitReached, Oldest: oldest}, err
	}
	return idempotency.ClaimResult{}, fmt.Errorf("unexpected reply %v", reply)
}

// Release frees an in-progress key. A key already completed, or gone, is left as it is.
func (s *Store) Release(ctx context.Context, scope, key string) error {
	_, err := s.run(ctx, s.scripts.releaseKey, nil, s.keyKeys(scope, key), key)
	return wrapErr(fmt.Sprintf("releasing key %q in %q", key, scope), err)
}

// Get reads a key as it stands; missing or expired → idempotency.ErrNotFound.
func (s *Store) Get(ctx context.Context, scope, key string, now time.Time) (*idempotency.Record, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.idemRecord(scope, key)).Result()
	var r *idempotency.Record
	if err == nil {
		r, err = decodeRecord(scope, m)
	}
	if err == nil && (m["state"] == "" || !r.ExpiresAt.After(now)) {
		err = idempotency.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("getting key %q in %q: %w", key, scope, err)
	}
	return r, nil
}

// keyCursor is where a page of keys ends: the creation score and the key.
type keyCursor struct {
	Score float64 `json:"s"`
	Key   string  `json:"k"`
}

// List returns a page of a scope's live keys, newest first, without header and body. It
// only reads: expired keys are left out of the page, not purged (claims purge them, a
// batch per claim); the creation index may still name a key whose record went with its
// TTL, which is skipped.
func (s *Store) List(ctx context.Context, p idempotency.ListParams) ([]*idempotency.Record, string, error) {
	var after *keyCursor
	if p.Cursor != "" {
		after = &keyCursor{}
		if err := storecodec.DecodeCursor(p.Cursor, after, idempotency.ErrInvalidCursor); err != nil {
			return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, err)
		}
	}
	limit := limits.Page(p.Limit)
	var recs []*idempotency.Record
	var scores []float64
	// The expired keys a page skips are mostly the oldest (a claim purges a batch): each
	// read of the creation index asks for twice as many entries as the last, up to a full
	// page's, so that walking past them costs a few round trips whatever the limit.
	for offset, count := int64(0), int64(limit+1); len(recs) <= limit; count = min(2*count, limits.MaxPage+1) {
		zs, err := s.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
			Key: s.k.idemCreated(p.Scope), Start: maxScore(after), Stop: "-inf",
			ByScore: true, Rev: true, Offset: offset, Count: count,
		}).Result()
		if err != nil {
			return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, err)
		}
		if len(zs) == 0 {
			break
		}
		offset += int64(len(zs))
		page, pageScores, err := s.liveKeys(ctx, p, zs, after)
		if err != nil {
			return nil, "", fmt.Errorf("listing keys in %q: %w", p.Scope, err)
		}
		recs, scores = append(recs, page...), append(scores, pageScores...)
	}
	if len(recs) <= limit {
		return recs, "", nil
	}
	recs = recs[:limit]
	next, err := storecodec.EncodeCursor(keyCursor{Score: scores[limit-1], Key: recs[limit-1].Key})
	return recs, next, err
}

// maxScore is where a page starts: the top, or the cursor's score (its ties are filtered
// by key in liveKeys).
func maxScore(after *keyCursor) string {
	if after == nil {
		return "+inf"
	}
	return strconv.FormatFloat(after.Score, 'f', -1, 64)
}

// liveKeys reads the records of zs, past the cursor, that have not expired, without their
// kept answers (keyHeads).
func (s *Store) liveKeys(ctx context.Context, p idempotency.ListParams, zs []redis.Z, after *keyCursor) ([]*idempotency.Record, []float64, error) {
	ids := make([]string, 0, len(zs))
	kept := make([]float64, 0, len(zs))
	for _, z := range zs {
		key, _ := z.Member.(string)
		if after != nil && z.Score == after.Score && key >= after.Key {
			continue
		}
		ids, kept = append(ids, key), append(kept, z.Score)
	}
	hs, err := s.keyHeads(ctx, p.Scope, ids)
	if err != nil {
		return nil, nil, err
	}
	var recs []*idempotency.Record
	var scores []float64
	for i, h := range hs {
		if h["state"] == "" {
			continue
		}
		r, err := decodeRecord(p.Scope, h)
		if err != nil {
			return nil, nil, err
		}
		if r.ExpiresAt.After(p.Now) {
			recs, scores = append(recs, r), append(scores, kept[i])
		}
	}
	return recs, scores, nil
}

// listedFields are the fields of a key's record a page of keys reads: all but the kept
// answer's header and body, which a page never shows.
var listedFields = []string{"key", "fingerprint", "method", "path", "run_id", "state", "status",
	"created_at", "locked_until", "expires_at"}

// keyHeads reads the listedFields of the records of scope's keys, in one round trip; a
// missing record reads as an empty map.
func (s *Store) keyHeads(ctx context.Context, scope string, keys []string) ([]map[string]string, error) {
	names := make([]string, len(keys))
	for i, key := range keys {
		names[i] = s.k.idemRecord(scope, key)
	}
	return s.heads(ctx, names, listedFields)
}
