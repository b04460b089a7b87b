package redisstore

import (
	"strconv"

	"github.com/gorunner/gorunner/runner"
)

// keys builds every Redis key and channel name of a store from its prefix, in one place.
// Lua scripts get whole keys in KEYS, or a key family's prefix in ARGV when they find the
// members (run IDs, hook tokens) only as they run.
type keys struct {
	p string
}

// Catalog.

func (k keys) catalogVersion() string         { return k.p + "catalog:version" }
func (k keys) workflow(id string) string      { return k.p + "wf:" + id }
func (k keys) workflowNames() string          { return k.p + "wf:names" }    // hash: live name → ID
func (k keys) workflowWebhooks() string       { return k.p + "wf:webhooks" } // hash: live webhook digest → ID
func (k keys) workflowsByName() string        { return k.p + "wf:byname" }   // lex zset of live names
func (k keys) workflowsPublished() string     { return k.p + "wf:published" }
func (k keys) versionPrefix(wf string) string { return k.p + "wfver:" + wf + ":" }
func (k keys) version(wf string, n int) string {
	return k.versionPrefix(wf) + strconv.Itoa(n)
}
func (k keys) connection(id string) string { return k.p + "conn:" + id }
func (k keys) connectionNames() string     { return k.p + "conn:names" }  // hash: name → ID
func (k keys) connectionsByName() string   { return k.p + "conn:byname" } // lex zset of names

// Auth.

func (k keys) token(id string) string  { return k.p + "token:" + id }
func (k keys) tokenHashes() string     { return k.p + "token:hashes" }  // hash: SHA-256 → ID
func (k keys) tokensByCreated() string { return k.p + "token:created" } // lex zset of created:ID

// Idempotency. A scope is length-prefixed so that no scope and key pair can spell another.

func (k keys) idemPrefix(scope string) string {
	return k.p + "idem:" + strconv.Itoa(len(scope)) + ":" + scope + ":"
}
func (k keys) idemRecord(scope, key string) string { return k.idemPrefix(scope) + key }
func (k keys) idemExpiries(scope string) string    { return k.p + "idemexp:" + scope }  // zset: key by expiry
func (k keys) idemLocks(scope string) string       { return k.p + "idemlock:" + scope } // zset: in-progress key by lock end
func (k keys) idemCreated(scope string) string     { return k.p + "idemnew:" + scope }  // zset: key by creation, for lists
func (k keys) idemDead(scope string) string        { return k.p + "idemdead:" + scope } // zset: abandoned claim by expiry

// Runner.

func (k keys) runPrefix() string               { return k.p + "run:" }
func (k keys) run(id string) string            { return k.runPrefix() + id }
func (k keys) runsDue() string                 { return k.p + "runs:due" }     // zset: run ID by when it may be claimed
func (k keys) runsCreated() string             { return k.p + "runs:created" } // lex zset of created:ID
func (k keys) runsByWorkflow(wf string) string { return k.p + "runs:wf:" + wf }
func (k keys) runsStatusPrefix() string        { return k.p + "runs:status:" }
func (k keys) runsByStatus(st string) string   { return k.runsStatusPrefix() + st }
func (k keys) runHooksPrefix() string          { return k.p + "runhooks:" } // set of env:token a run owns
func (k keys) hookPrefix() string              { return k.p + "hook:" }
func (k keys) hook(env, token string) string   { return k.hookPrefix() + hookMember(env, token) }
func (k keys) runHooks(id string) string       { return k.runHooksPrefix() + id }
func (k keys) payloadsPrefix() string          { return k.p + "pl:" } // hash of a run: seq → payload, q<seq> → hook member, t<seq> → queued at
func (k keys) payloads(runID string) string    { return k.payloadsPrefix() + runID }
func (k keys) queuePrefix() string             { return k.p + "pq:" } // zset of a token's queued seqs
func (k keys) queue(env, token string) string  { return k.queuePrefix() + hookMember(env, token) }
func (k keys) payloadSeq() string              { return k.p + "payload:seq" }

// concurrencyScope names a concurrency key within its workflow and environment (the
// workflow length-prefixed, environments hold no colon).
func concurrencyScope(c runner.Concurrency, wf, env string) string {
	return strconv.Itoa(len(wf)) + ":" + wf + ":" + env + ":" + c.Key
}
func (k keys) concurrencyQueue(scope string) string  { return k.p + "cq:" + scope } // lex zset of a key's queued runs' sort keys
func (k keys) concurrencyActive(scope string) string { return k.p + "ca:" + scope } // set of a key's active run IDs

// OAuth. Secrets' SHA-256 appear in key names as hex.

func (k keys) oauthClient(id string) string       { return k.p + "oauth:client:" + id }
func (k keys) oauthCode(hexHash string) string    { return k.p + "oauth:code:" + hexHash }
func (k keys) oauthSignIn(hexHash string) string  { return k.p + "oauth:signin:" + hexHash }
func (k keys) oauthGrantPrefix() string           { return k.p + "oauth:grant:" }
func (k keys) oauthGrant(id string) string        { return k.oauthGrantPrefix() + id }
func (k keys) oauthGrantTokens(id string) string  { return k.p + "oauth:granttokens:" + id }  // list of token IDs
func (k keys) oauthGrantRefresh(id string) string { return k.p + "oauth:grantrefresh:" + id } // set of refresh hashes
func (k keys) oauthRefresh() string               { return k.p + "oauth:refresh" }            // hash: refresh hash → grant ID
func (k keys) oauthClients() string               { return k.p + "oauth:clients" }            // lex zset of created:ID
func (k keys) oauthTokenGrant() string            { return k.p + "oauth:tokengrant" }         // hash: access token ID → grant ID
func (k keys) oauthGrants() string                { return k.p + "oauth:grants" }             // lex zset of created:ID
func (k keys) oauthGrantsOf(principal string) string {
	return k.p + "oauth:grants:p:" + principal
}

// hookMember names a token within its environment; environments hold no colon.
func hookMember(env, token string) string { return env + ":" + token }

// Pub/sub channels.

func (k keys) eventsChannel() string  { return k.p + "signal:events" }
func (k keys) catalogChannel() string { return k.p + "signal:catalog" }
