package redisstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/gorunner/gorunner/store/storecopy"
)

// A Redis store is a copy's source (here) and its target (copyin.go).
var _ storecopy.Source = (*Store)(nil)

// hashKind is a kind whose records are one hash each, its fields the record's, at the keys
// pattern finds (less the index keys skip names).
type hashKind struct {
	pattern string
	skip    []string
	// fromKey adds the fields the key's name holds (rest: the key less the family's
	// prefix, the pattern's part before its '*').
	fromKey func(rest string, f map[string]any) error
	// hexed are the fields kept as hex, the record's bytes.
	hexed []string
}

// hashKinds are the kinds kept as one hash a record.
var hashKinds = map[storecopy.Kind]hashKind{
	"workflows":          {pattern: "wf:*", skip: []string{"names", "webhooks", "byname", "published"}},
	"workflow_versions":  {pattern: "wfver:*"},
	"connections":        {pattern: "conn:*", skip: []string{"names", "byname"}},
	"api_tokens":         {pattern: "token:*", skip: []string{"hashes", "created"}},
	"idempotency_keys":   {pattern: "idem:*", fromKey: idemScope},
	"runs":               {pattern: "run:*"},
	"hooks":              {pattern: "hook:*", fromKey: hookOfKey},
	"oauth_clients":      {pattern: "oauth:client:*"},
	"oauth_codes":        {pattern: "oauth:code:*", fromKey: hashOfKey},
	"oauth_grants":       {pattern: "oauth:grant:*", hexed: []string{"refresh_hash"}},
	"oauth_signin_codes": {pattern: "oauth:signin:*", fromKey: hashOfKey},
}

// notFields are hash fields that are no field of their record: sort keys (the indexes'
// members), and a run's step records, exported as run_steps.
func notField(kind storecopy.Kind, name string) bool {
	return name == "sort_key" || kind == "runs" && strings.HasPrefix(name, stepFieldPrefix)
}

// idemScope reads a key record's scope from its name: <len>:<scope>:<key>.
func idemScope(rest string, f map[string]any) error {
	n, tail, ok := strings.Cut(rest, ":")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size > len(tail) {
		return fmt.Errorf("idempotency record %q: no scope in its name", rest)
	}
	f["scope"] = tail[:size]
	return nil
}

// hookOfKey reads a hook's environment and token from its name (hookMember).
func hookOfKey(rest string, f map[string]any) error {
	env, token, ok := strings.Cut(rest, ":")
	if !ok {
		return fmt.Errorf("hook %q: no environment in its name", rest)
	}
	f["environment"], f["token"] = env, token
	return nil
}

// hashOfKey reads a code's SHA-256 from its name, in hex.
func hashOfKey(rest string, f map[string]any) error {
	b, err := hex.DecodeString(rest)
	if err != nil {
		return fmt.Errorf("code %q: %w", rest, err)
	}
	f["hash"] = b
	return nil
}

// CountRecords counts the records of kind (storecopy.Source), by reading them: a copy from
// Redis reads everything twice, the price of an exact progress bar.
func (s *Store) CountRecords(ctx context.Context, kind storecopy.Kind) (int64, error) {
	var n int64
	err := s.ExportRecords(ctx, kind, storecopy.BatchSize, func(b []storecopy.Record) error {
		n += int64(len(b))
		return nil
	})
	return n, err
}

// ExportRecords hands every record of kind to emit in batches, in key order
// (storecopy.Source).
func (s *Store) ExportRecords(ctx context.Context, kind storecopy.Kind, size int, emit func([]storecopy.Record) error) error {
	records, err := s.records(ctx, kind)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kind, err)
	}
	for len(records) > 0 {
		n := min(size, len(records))
		if err := emit(records[:n]); err != nil {
			return err
		}
		records = records[n:]
	}
	return nil
}

// records reads every record of kind.
func (s *Store) records(ctx context.Context, kind storecopy.Kind) ([]storecopy.Record, error) {
	switch kind {
	case "counters":
		v, err := s.rdb.Get(ctx, s.k.catalogVersion()).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, wrapErr("reading the catalog version", err)
		}
		if v == "" {
			v = "0"
		}
		return []storecopy.Record{{Kind: kind, Fields: map[string]any{"name": "catalog_version", "value": v}}}, nil
	case "run_steps":
		return s.runSteps(ctx)
	case "payloads":
		return s.payloadRecords(ctx)
	case "oauth_refresh_tokens", "oauth_grant_tokens":
		return s.grantRecords(ctx, kind)
	}
	hk, ok := hashKinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind of record %q", kind)
	}
	return s.hashRecords(ctx, kind, hk)
}

// scanKeys finds the keys of pattern (after the store's prefix) in name order, less those
// whose rest is in skip, answering each rest too.
func (s *Store) scanKeys(ctx context.Context, pattern string, skip []string) (keys, rests []string, err error) {
	family := s.k.p + strings.TrimSuffix(pattern, "*")
	iter := s.rdb.Scan(ctx, 0, s.k.p+pattern, 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if rest := strings.TrimPrefix(k, family); !slices.Contains(skip, rest) {
			keys = append(keys, k)
		}
	}
	if err := iter.Err(); err != nil {
		return nil, nil, wrapErr("scanning "+pattern, err)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	rests = make([]string, len(keys))
	for i, k := range keys {
		rests[i] = strings.TrimPrefix(k, family)
	}
	return keys, rests, nil
}

// hashesAt reads the hashes at keys, in one round trip.
func (s *Store) hashesAt(ctx context.Context, keys []string) ([]map[string]string, error) {
	ids := make([]any, len(keys))
	for i, k := range keys {
		ids[i] = k
	}
	hs, err := s.hashes(ctx, func(k string) string { return k }, ids)
	return hs, wrapErr("reading records", err)
}

// hashRecords reads the records of a kind kept a hash each.
func (s *Store) hashRecords(ctx context.Context, kind storecopy.Kind, hk hashKind) ([]storecopy.Record, error) {
	keys, rests, err := s.scanKeys(ctx, hk.pattern, hk.skip)
	if err != nil {
		return nil, err
	}
	hs, err := s.hashesAt(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]storecopy.Record, 0, len(hs))
	for i, h := range hs {
		if len(h) == 0 {
			continue // gone since the scan
		}
		f := make(map[string]any, len(h))
		for name, v := range h {
			if notField(kind, name) {
				continue
			}
			// Redis keeps an absent value (no output, no error) as "": nil, the target's
			// default, which a Redis target keeps as "" again.
			f[name] = v
			if v == "" {
				f[name] = nil
			}
		}
		for _, name := range hk.hexed {
			if f[name], err = hex.DecodeString(h[name]); err != nil {
				return nil, fmt.Errorf("%s %s: %w", kind, rests[i], err)
			}
		}
		if hk.fromKey != nil {
			if err := hk.fromKey(rests[i], f); err != nil {
				return nil, err
			}
		}
		out = append(out, storecopy.Record{Kind: kind, Fields: f})
	}
	return out, nil
}

// runSteps reads the step records of every run, held in its hash as step:<index>.
func (s *Store) runSteps(ctx context.Context) ([]storecopy.Record, error) {
	keys, rests, err := s.scanKeys(ctx, "run:*", nil)
	if err != nil {
		return nil, err
	}
	hs, err := s.hashesAt(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []storecopy.Record
	for i, h := range hs {
		var idxs []int
		for name := range h {
			if n, ok := strings.CutPrefix(name, stepFieldPrefix); ok {
				idx, err := strconv.Atoi(n)
				if err != nil {
					return nil, fmt.Errorf("run %s: step field %q", rests[i], name)
				}
				idxs = append(idxs, idx)
			}
		}
		slices.Sort(idxs)
		for _, idx := range idxs {
			out = append(out, storecopy.Record{Kind: "run_steps", Fields: map[string]any{
				"run_id": rests[i], "idx": int64(idx), "data": h[stepFieldPrefix+strconv.Itoa(idx)]}})
		}
	}
	return out, nil
}

// payloadRecords reads every queued payload: a run's hash holds <seq> → payload,
// q<seq> → the hook member it was queued for and t<seq> → when (none before it was kept).
func (s *Store) payloadRecords(ctx context.Context) ([]storecopy.Record, error) {
	keys, rests, err := s.scanKeys(ctx, "pl:*", nil)
	if err != nil {
		return nil, err
	}
	hs, err := s.hashesAt(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []storecopy.Record
	for i, h := range hs {
		for name, payload := range h {
			seq, err := strconv.ParseInt(name, 10, 64)
			if err != nil {
				continue // a q<seq> field
			}
			f := map[string]any{"seq": seq, "run_id": rests[i], "payload": payload}
			if at := h["t"+name]; at != "" {
				f["created_at"] = at
			}
			if err := hookOfKey(h["q"+name], f); err != nil {
				return nil, fmt.Errorf("payload %d of run %s: %w", seq, rests[i], err)
			}
			out = append(out, storecopy.Record{Kind: "payloads", Fields: f})
		}
	}
	slices.SortFunc(out, func(a, b storecopy.Record) int { return int(a.Fields["seq"].(int64) - b.Fields["seq"].(int64)) })
	return out, nil
}

// grantRecords reads the refresh tokens (a set of hex hashes) or the access tokens (a list)
// of every grant.
func (s *Store) grantRecords(ctx context.Context, kind storecopy.Kind) ([]storecopy.Record, error) {
	_, ids, err := s.scanKeys(ctx, "oauth:grant:*", nil)
	if err != nil {
		return nil, err
	}
	var out []storecopy.Record
	for _, id := range ids {
		if kind == "oauth_grant_tokens" {
			tokens, err := s.rdb.LRange(ctx, s.k.oauthGrantTokens(id), 0, -1).Result()
			if err != nil {
				return nil, wrapErr("reading a grant's tokens", err)
			}
			for i, t := range tokens {
				// seq counts from 1, as the SQL stores number a grant's tokens.
				out = append(out, storecopy.Record{Kind: kind, Fields: map[string]any{"grant_id": id, "seq": int64(i + 1), "token_id": t}})
			}
			continue
		}
		hashes, err := s.rdb.SMembers(ctx, s.k.oauthGrantRefresh(id)).Result()
		if err != nil {
			return nil, wrapErr("reading a grant's refresh tokens", err)
		}
		slices.Sort(hashes)
		for _, h := range hashes {
			b, err := hex.DecodeString(h)
			if err != nil {
				return nil, fmt.Errorf("grant %s: refresh token %q: %w", id, h, err)
			}
			out = append(out, storecopy.Record{Kind: kind, Fields: map[string]any{"hash": b, "grant_id": id}})
		}
	}
	return out, nil
}
