package redisstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/storecopy"
)

// A copy into Redis writes each record where this store's scripts keep it, with every index
// entry they keep beside it (its names, sort keys, due score, scope indexes and TTLs), so
// that the copied store serves as one filled through its contracts.
var _ storecopy.Target = (*Store)(nil)

// hexedFields are the fields this store keeps as hex (the record's bytes), by kind.
var hexedFields = map[storecopy.Kind][]string{"oauth_grants": {"refresh_hash"}}

// isTimeField tells the fields that hold a time (UTC Unix nanoseconds): every one of the
// schema named *_at or *_until, and no other.
func isTimeField(name string) bool {
	return strings.HasSuffix(name, "_at") || strings.HasSuffix(name, "_until")
}

// importer writes one record (its fields as this store keeps them) and its index entries.
type importer func(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error

// importers write the records of each kind.
var importers = map[storecopy.Kind]importer{
	"counters":             importCounter,
	"workflows":            importWorkflow,
	"workflow_versions":    importVersion,
	"connections":          importConnection,
	"api_tokens":           importToken,
	"idempotency_keys":     importKey,
	"runs":                 importRun,
	"run_steps":            importStep,
	"hooks":                importHook,
	"payloads":             importPayload,
	"oauth_clients":        importClient,
	"oauth_codes":          importCode(func(k keys, hexHash string) string { return k.oauthCode(hexHash) }),
	"oauth_grants":         importGrant,
	"oauth_refresh_tokens": importRefresh,
	"oauth_grant_tokens":   importGrantToken,
	"oauth_signin_codes":   importCode(func(k keys, hexHash string) string { return k.oauthSignIn(hexHash) }),
}

// ImportRecords writes records, all of kind, in one MULTI/EXEC transaction
// (storecopy.Target).
func (s *Store) ImportRecords(ctx context.Context, kind storecopy.Kind, records []storecopy.Record) error {
	put, ok := importers[kind]
	if !ok {
		return fmt.Errorf("unknown kind of record %q", kind)
	}
	hs := make([]map[string]string, len(records))
	for i, r := range records {
		h, err := hashOf(kind, r)
		if err != nil {
			return err
		}
		hs[i] = h
	}
	// Scripts run inside the transaction as EVALSHA, which a server that lacks them would
	// refuse there alone.
	for _, sc := range []*redis.Script{s.scripts.importKey, s.scripts.raiseCounter} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return wrapErr("loading the copy's scripts", err)
		}
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, h := range hs {
			if err := put(ctx, s, p, h); err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
		}
		return nil
	})
	return err
}

// hashOf is r's fields as this store keeps them: times as ts, bytes as they are (or hex),
// numbers in decimal, nil empty.
func hashOf(kind storecopy.Kind, r storecopy.Record) (map[string]string, error) {
	h := make(map[string]string, len(r.Fields))
	for name, v := range r.Fields {
		if v == nil && absentWhenNull[name] {
			continue
		}
		s, err := fieldValue(name, v)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", kind, name, err)
		}
		h[name] = s
	}
	for _, name := range hexedFields[kind] {
		h[name] = hex.EncodeToString([]byte(h[name]))
	}
	return h, nil
}

// absentWhenNull are the fields whose NULL this store keeps as no field at all, since
// their empty value means something else: a run without a concurrency limit has no
// concurrency_key, where "" is the workflow's one key.
var absentWhenNull = map[string]bool{"concurrency_key": true, "concurrency_limit": true}

// fieldValue is an exported value as this store keeps the field name.
func fieldValue(name string, v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case []byte:
		return string(v), nil
	case string:
		if !isTimeField(name) {
			return v, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%q is no time: %w", v, err)
		}
		return fieldValue(name, n)
	case int64:
		if !isTimeField(name) {
			return strconv.FormatInt(v, 10), nil
		}
		if v < 0 {
			return "", fmt.Errorf("a time before 1970 (%d) cannot be kept", v)
		}
		return ts(time.Unix(0, v)), nil
	}
	return "", fmt.Errorf("a %T cannot be copied", v)
}

// take removes the field name from h, which the key of its record holds instead, and
// answers it; a record without it is an error.
func take(h map[string]string, name string) (string, error) {
	v, ok := h[name]
	if !ok || v == "" {
		return "", fmt.Errorf("a record without %s", name)
	}
	delete(h, name)
	return v, nil
}

// flat is h as HSET's field, value, … arguments.
func flat(h map[string]string) []any {
	out := make([]any, 0, 2*len(h))
	for k, v := range h {
		out = append(out, k, v)
	}
	return out
}

// only refuses a record with a field but names: the kinds not kept as one hash a record
// have a place for those alone.
func only(h map[string]string, names ...string) error {
	for name := range h {
		if !slices.Contains(names, name) {
			return fmt.Errorf("no place for the field %q", name)
		}
	}
	return nil
}

func importCounter(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	if err := only(h, "name", "value"); err != nil {
		return err
	}
	if h["name"] != "catalog_version" {
		return fmt.Errorf("unknown counter %q", h["name"])
	}
	p.Set(ctx, s.k.catalogVersion(), h["value"], 0)
	return nil
}

func importWorkflow(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	id, name := h["id"], h["name"]
	p.HSet(ctx, s.k.workflow(id), flat(h)...)
	if h["deleted_at"] != zeroTS && h["deleted_at"] != "" {
		return nil
	}
	p.HSet(ctx, s.k.workflowNames(), name, id)
	p.HSet(ctx, s.k.workflowWebhooks(), h["webhook_token"], id)
	p.ZAdd(ctx, s.k.workflowsByName(), redis.Z{Member: name})
	if h["published"] == "1" {
		p.ZAdd(ctx, s.k.workflowsPublished(), redis.Z{Member: name})
	}
	return nil
}

func importVersion(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	n, err := strconv.Atoi(h["version"])
	if err != nil {
		return fmt.Errorf("version %q: %w", h["version"], err)
	}
	p.HSet(ctx, s.k.version(h["workflow_id"], n), flat(h)...)
	return nil
}

func importConnection(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	p.HSet(ctx, s.k.connection(h["id"]), flat(h)...)
	p.HSet(ctx, s.k.connectionNames(), h["name"], h["id"])
	p.ZAdd(ctx, s.k.connectionsByName(), redis.Z{Member: h["name"]})
	return nil
}

// sortKeyOf is the sort key (sortKey) of a record with created_at and id.
func sortKeyOf(h map[string]string) string { return h["created_at"] + ":" + h["id"] }

func importToken(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	member := sortKeyOf(h)
	h["sort_key"] = member
	p.HSet(ctx, s.k.token(h["id"]), flat(h)...)
	p.HSet(ctx, s.k.tokenHashes(), h["hash"], h["id"])
	p.ZAdd(ctx, s.k.tokensByCreated(), redis.Z{Member: member})
	return nil
}

// importKey writes a key's record and its scope's index entries (import_key), kept by
// Redis for the rest of the key's life, at least minKeyTTL.
func importKey(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	scope, err := take(h, "scope")
	if err != nil {
		return err
	}
	f := &fields{m: h}
	expires, created, locked := f.time("expires_at"), f.time("created_at"), f.time("locked_until")
	if f.err != nil {
		return f.err
	}
	lock := ""
	if h["state"] == "in_progress" {
		lock = score(locked)
	}
	ttl := max(time.Until(expires), minKeyTTL)
	args := append([]any{s.k.idemPrefix(scope), h["key"], ttl.Milliseconds(), score(expires), score(created), lock}, flat(h)...)
	s.scripts.importKey.EvalSha(ctx, p, s.scopeIndexes(scope), args...)
	return nil
}

// importRun writes a run, without its steps (run_steps), in every index a run is listed
// by and, when it is due by time, in the due set as reindex_due would put it.
func importRun(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	id, member := h["id"], sortKeyOf(h)
	h["sort_key"] = member
	p.HSet(ctx, s.k.run(id), flat(h)...)
	for _, index := range []string{s.k.runsCreated(), s.k.runsByWorkflow(h["workflow_id"]), s.k.runsByStatus(h["status"])} {
		p.ZAdd(ctx, index, redis.Z{Member: member})
	}
	r, err := decodeRun(h)
	if err != nil {
		return err
	}
	leaseUntil, err := parseTS(h["lease_until"])
	if err != nil {
		return err
	}
	if due := dueScore(r, h["lease_owner"], leaseUntil); due != "" {
		p.Do(ctx, "zadd", s.k.runsDue(), due, id)
	}
	importQueued(ctx, s, p, r, member)
	return nil
}

// importQueued puts a run with a concurrency limit where create_run.lua keeps it: a queued
// run in its key's queue, an active one among its key's active runs.
func importQueued(ctx context.Context, s *Store, p redis.Pipeliner, r *runner.Run, member string) {
	if r.Concurrency == nil || r.Status.Terminal() {
		return
	}
	scope := concurrencyScope(*r.Concurrency, r.WorkflowID, r.Environment)
	if r.Status == runner.StatusQueued {
		p.ZAdd(ctx, s.k.concurrencyQueue(scope), redis.Z{Member: member})
		return
	}
	p.SAdd(ctx, s.k.concurrencyActive(scope), r.ID)
}

func importStep(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	if err := only(h, "run_id", "idx", "data"); err != nil {
		return err
	}
	p.HSet(ctx, s.k.run(h["run_id"]), stepFieldPrefix+h["idx"], h["data"])
	return nil
}

func importHook(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	env, err := take(h, "environment")
	if err != nil {
		return err
	}
	token, err := take(h, "token")
	if err != nil {
		return err
	}
	p.HSet(ctx, s.k.hook(env, token), flat(h)...)
	p.SAdd(ctx, s.k.runHooks(h["run_id"]), hookMember(env, token))
	return nil
}

// importPayload queues a payload for its run's token as enqueue_payload does, and moves the
// store's payload sequence past it.
func importPayload(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	if err := only(h, "seq", "environment", "token", "run_id", "payload", "created_at"); err != nil {
		return err
	}
	seq, member := h["seq"], hookMember(h["environment"], h["token"])
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return fmt.Errorf("payload %q: %w", seq, err)
	}
	p.HSet(ctx, s.k.payloads(h["run_id"]), seq, h["payload"], "q"+seq, member, "t"+seq, h["created_at"])
	p.ZAdd(ctx, s.k.queue(h["environment"], h["token"]), redis.Z{Score: float64(n), Member: seq})
	s.scripts.raiseCounter.EvalSha(ctx, p, []string{s.k.payloadSeq()}, seq)
	return nil
}

func importClient(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	p.HSet(ctx, s.k.oauthClient(h["id"]), flat(h)...)
	p.ZAdd(ctx, s.k.oauthClients(), redis.Z{Member: sortKeyOf(h)})
	return nil
}

// importCode writes an authorization or sign-in code at the key at names for its hash,
// kept as CreateCode keeps it: until oauth.CodeRetention past its expiry.
func importCode(at func(k keys, hexHash string) string) importer {
	return func(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
		hash, err := take(h, "hash")
		if err != nil {
			return err
		}
		expires, err := parseTS(h["expires_at"])
		if err != nil {
			return err
		}
		key := at(s.k, hex.EncodeToString([]byte(hash)))
		p.HSet(ctx, key, flat(h)...)
		p.PExpireAt(ctx, key, expires.Add(oauth.CodeRetention))
		return nil
	}
}

func importGrant(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	id, member := h["id"], sortKeyOf(h)
	h["sort_key"] = member
	p.HSet(ctx, s.k.oauthGrant(id), flat(h)...)
	p.ZAdd(ctx, s.k.oauthGrants(), redis.Z{Member: member})
	p.ZAdd(ctx, s.k.oauthGrantsOf(h["principal_id"]), redis.Z{Member: member})
	return nil
}

// importRefresh indexes one of the refresh tokens a grant ever had (hex, as the grant's
// own refresh_hash), so that a rotated-away one is known as reused.
func importRefresh(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	if err := only(h, "hash", "grant_id"); err != nil {
		return err
	}
	hash := hex.EncodeToString([]byte(h["hash"]))
	p.HSet(ctx, s.k.oauthRefresh(), hash, h["grant_id"])
	p.SAdd(ctx, s.k.oauthGrantRefresh(h["grant_id"]), hash)
	return nil
}

// importGrantToken appends an access token to its grant's, in the order records come
// (every source exports them in key order: grant, then seq).
func importGrantToken(ctx context.Context, s *Store, p redis.Pipeliner, h map[string]string) error {
	if err := only(h, "grant_id", "seq", "token_id"); err != nil {
		return err
	}
	p.RPush(ctx, s.k.oauthGrantTokens(h["grant_id"]), h["token_id"])
	p.HSet(ctx, s.k.oauthTokenGrant(), h["token_id"], h["grant_id"])
	return nil
}
