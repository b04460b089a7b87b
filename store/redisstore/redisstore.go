// Package redisstore is GoRunner's distributed backend: one Redis database holds
// workflows, versions, connections, API tokens, idempotency keys, runs, hooks and queued
// payloads, so that any number of GoRunner processes on any number of hosts work as one.
// It implements catalog.Store, auth.Store, idempotency.Store and runner.Store and passes
// the same conformance suites as store/sqlitestore, whose semantics it mirrors.
//
// Every change that touches more than one key is one Lua script (embedded from lua/, each
// prefixed with lua/lib.lua), so it is atomic on the server: claims of runs, tokens and
// idempotency keys are decided inside the script, never by a read before it. Reads that
// span keys (a list, then its records) are not atomic and skip records gone meanwhile.
// go-redis retries a command that failed on a dead connection (as after a Redis restart),
// which is safe: it never ran. It also retries one whose reply timed out (read_timeout,
// default 3 s), which may have run: a script is written so that running it twice is
// harmless or answered as a conflict (a claim run twice answers its own caller "in
// progress", which ends as 409 or a replay). Set max_retries=-1 in the URL to trade that
// for errors on every dead pooled connection after a restart.
//
// Every key name comes from keys.go, under Config.Prefix; scripts that find members as
// they run (run IDs in the due set) get the key family's prefix. The store does not
// support Redis Cluster: scripts touch keys they cannot declare up front.
//
// Times are kept as 20-digit zero-padded Unix nanoseconds (0 = unset), because Lua numbers
// are doubles and would round nanoseconds; fixed width makes string order time order.
// Sorted-set scores are microseconds (the first 17 digits), exact in a double; a script
// re-checks the exact time in the record before it acts on a score. Times before 1970 are
// not supported.
//
// Due runs sit in a sorted set scored by when they may next be claimed: their wake-up, or
// their lease's end while a worker holds them, so a claim scans only runs it can take.
// Like sqlitestore, a wake-up asked from outside since a claim (poke_at) survives the
// worker's next save, SaveRun writes only the fields a worker changes after admission,
// consuming a payload twice fails with runner.ErrNotFound, and a bad cursor is
// ErrInvalidCursor.
//
// Idempotency records expire with their key's life: a Redis TTL of the key's lifetime
// (24 h for an in-progress claim, ExpiresAt − CreatedAt for an answer), while the logic
// compares the stored expiry with the caller's clock. Each scope keeps a sorted set of its
// keys by expiry and one of its in-progress keys by lock end, to count live keys cheaply.
package redisstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/store"
)

var _ store.Backend = (*Store)(nil)

// DefaultPrefix is the key prefix when Config.Prefix is empty.
const DefaultPrefix = "gorunner:"

// Config tunes a Store; a nil *Config means the defaults.
type Config struct {
	// Prefix starts every key and channel name, so several GoRunner installations (or
	// tests) can share one database; default DefaultPrefix.
	Prefix string
}

func (c *Config) withDefaults() Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Prefix == "" {
		out.Prefix = DefaultPrefix
	}
	return out
}

// Store is a Redis-backed store, safe for concurrent use by many processes.
type Store struct {
	rdb     *redis.Client
	k       keys
	scripts *scripts
	defs    *definitions
	// keyReads, set only by tests, hears how many index entries a key check read.
	keyReads func(n int64)
}

// Open connects to the Redis named by rawURL (redis://[user:password@]HOST:PORT/DB, with
// the options go-redis's ParseURL reads) and checks that it answers. Every error of a
// call that could not reach Redis is store.ErrUnreachable. A "prefix" query
// parameter sets the key prefix when cfg does not.
func Open(ctx context.Context, rawURL string, cfg *Config) (*Store, error) {
	c := cfg.withDefaults()
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parsing redis url: %w", err)
	}
	q := u.Query()
	if p := q.Get("prefix"); p != "" && (cfg == nil || cfg.Prefix == "") {
		c.Prefix = p
	}
	q.Del("prefix")
	u.RawQuery = q.Encode()
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("parsing redis url: %w", err)
	}
	sc, err := loadScripts()
	if err != nil {
		return nil, err
	}
	s := &Store{rdb: redis.NewClient(opts), k: keys{p: c.Prefix}, scripts: sc, defs: &definitions{}}
	s.rdb.AddHook(unreachable{})
	if err := s.Ping(ctx); err != nil {
		return nil, errors.Join(err, s.rdb.Close())
	}
	return s, nil
}

// Close closes the connections.
func (s *Store) Close() error {
	return s.rdb.Close()
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("pinging redis: %w", err)
	}
	return nil
}

//go:embed lua/*.lua
var luaFS embed.FS

// scripts are the store's Lua scripts, each one atomic change.
type scripts struct {
	createWorkflow, updateDraft, deleteWorkflow, publish, unpublish, rotateWebhook *redis.Script
	sealWebhook                                                                    *redis.Script
	createConnection, deleteConnection, createToken, deleteToken                   *redis.Script
	claimKey, completeKey, releaseKey                                              *redis.Script
	createRun, claimRuns, renewLeases, saveRun, releaseRun, requestCancel, wakeRun *redis.Script
	claimToken, enqueuePayload, nextPayload, missAsk                               *redis.Script
	exchangeCode, rotateRefresh, deleteGrant                                       *redis.Script
	deleteRuns                                                                     *redis.Script
	importKey, raiseCounter                                                        *redis.Script
}

func loadScripts() (*scripts, error) {
	lib, err := luaFS.ReadFile("lua/lib.lua")
	if err != nil {
		return nil, err
	}
	var firstErr error
	load := func(name string) *redis.Script {
		body, err := luaFS.ReadFile("lua/" + name + ".lua")
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("loading script %s: %w", name, err)
		}
		return redis.NewScript(string(lib) + "\n" + string(body))
	}
	sc := &scripts{
		createWorkflow: load("create_workflow"), updateDraft: load("update_draft"),
		deleteWorkflow: load("delete_workflow"), publish: load("publish"), unpublish: load("unpublish"),
		rotateWebhook: load("rotate_webhook"), sealWebhook: load("seal_webhook"), createConnection: load("create_connection"),
		deleteConnection: load("delete_connection"), createToken: load("create_token"),
		deleteToken: load("delete_token"), claimKey: load("claim_key"), completeKey: load("complete_key"),
		releaseKey: load("release_key"), createRun: load("create_run"), claimRuns: load("claim_runs"),
		renewLeases: load("renew_leases"), saveRun: load("save_run"), releaseRun: load("release_run"),
		requestCancel: load("request_cancel"), wakeRun: load("wake_run"), claimToken: load("claim_token"),
		enqueuePayload: load("enqueue_payload"), nextPayload: load("next_payload"), missAsk: load("miss_ask"),
		exchangeCode: load("exchange_code"), rotateRefresh: load("rotate_refresh"), deleteGrant: load("delete_grant"),
		deleteRuns: load("delete_runs"), importKey: load("import_key"), raiseCounter: load("raise_counter"),
	}
	return sc, firstErr
}

// Script failures the scripts raise with redis.error_reply, by their first word.
const (
	replyNotFound  = "GR_NOTFOUND"
	replyConflict  = "GR_CONFLICT"
	replyLeaseLost = "GR_LEASELOST"
	replyFinished  = "GR_FINISHED"
	replyToken     = "GR_TOKEN" // followed by the owner's run ID
	replyUsed      = "GR_USED"
	replyAllSteps  = "GR_ALLSTEPS"
	replyStale     = "GR_STALE"
)

// replyError turns a script's error reply into the sentinel sentinels maps its first word
// to; any other error passes unchanged.
func replyError(err error, sentinels map[string]error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	word, _, _ := cutWord(re.Error())
	if s, ok := sentinels[word]; ok {
		return s
	}
	return err
}

// cutWord splits a script's error reply into its first word and the rest; the server may
// put its generic "ERR " code before the script's own word.
func cutWord(reply string) (word, rest string, found bool) {
	return strings.Cut(strings.TrimPrefix(reply, "ERR "), " ")
}

// run runs a script and maps its error replies with sentinels.
func (s *Store) run(ctx context.Context, sc *redis.Script, sentinels map[string]error, ks []string, args ...any) (any, error) {
	res, err := sc.Run(ctx, s.rdb, ks, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, replyError(err, sentinels)
	}
	return res, nil
}

// evalsha runs sc as cmd, a whole EVALSHA command the caller built in one slice ("evalsha",
// sc's hash, the number of keys, the keys, the arguments), so that go-redis copies none of
// it, and maps its error replies as run does. A server that does not hold the script (it
// restarted, or was flushed) is given it and asked again.
func (s *Store) evalsha(ctx context.Context, sc *redis.Script, sentinels map[string]error, cmd []any) (any, error) {
	res, err := s.rdb.Do(ctx, cmd...).Result()
	// HasErrorPrefix allocates even for a nil error: a script that ran asks nothing of it.
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err = sc.Load(ctx, s.rdb).Err(); err == nil {
			res, err = s.rdb.Do(ctx, cmd...).Result()
		}
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, replyError(err, sentinels)
	}
	return res, nil
}

// hashes reads, in one round trip, the hashes that key names for ids (nil entries of an
// HMGET are skipped); a missing hash reads as an empty map.
func (s *Store) hashes(ctx context.Context, key func(string) string, ids []any) ([]map[string]string, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, 0, len(ids))
	for _, id := range ids {
		if id, ok := id.(string); ok {
			cmds = append(cmds, pipe.HGetAll(ctx, key(id)))
		}
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]map[string]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// heads reads, in one round trip, fields of the hashes named by keys (HMGET); a missing
// hash or field is absent from its map.
func (s *Store) heads(ctx context.Context, keys, fields []string) ([]map[string]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(keys))
	for i, key := range keys {
		cmds[i] = pipe.HMGet(ctx, key, fields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]map[string]string, len(cmds))
	for i, c := range cmds {
		m := make(map[string]string, len(fields))
		for j, v := range c.Val() {
			if v, ok := v.(string); ok {
				m[fields[j]] = v
			}
		}
		out[i] = m
	}
	return out, nil
}

// wrapErr says what was being done when err happened; nil stays nil.
func wrapErr(doing string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// anyStrings turns a list of strings into the []any that hashes takes.
func anyStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
