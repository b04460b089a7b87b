package auth

import (
	"slices"
	"sync"
	"time"
)

// Bounds of the tokens a Service holds in memory (held).
const (
	// TokenCacheFor is how long a token's principal, once read from the store, answers
	// for the token without asking the store again. A token revoked through this process
	// is refused at once; one revoked through another process is refused here as soon as
	// its notice (events.Tokens) arrives, and at the latest TokenCacheFor after the revoke.
	TokenCacheFor = time.Second
	// MaxTokensHeld bounds how many tokens a Service holds; past it, it starts again empty.
	MaxTokensHeld = 10_000
)

// held keeps the principals tokens resolved to, by token hash, for TokenCacheFor, so that
// a request does not read its token from the store: with keyed replays held in memory too,
// a replayed call over HTTP asks the store nothing. Every way a token stops working is
// covered: its expiry is checked on every use (from the expiry the store gave), a revoke
// through this process forgets it before Revoke returns (forget), a revoke elsewhere
// forgets everything when its notice arrives, and an entry is never used past
// TokenCacheFor, which bounds a lost notice. Tokens never change otherwise (the store has
// no update), so scopes and audience are served as stored.
//
// gen closes the race between a lookup that read the store before a revoke and its put
// after it: forget moves gen, and a put read under an older gen is dropped.
type held struct {
	mu      sync.Mutex
	gen     uint64
	entries map[string]heldToken // by token hash
}

type heldToken struct {
	p       Principal
	read    time.Time  // when the store gave it
	expires *time.Time // the token's expiry, nil for none
}

// get returns the principal held for hash at now, if any.
func (h *held) get(hash []byte, now time.Time) (Principal, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries[string(hash)]
	switch {
	case !ok:
		return Principal{}, false
	case now.Before(e.read) || now.Sub(e.read) >= TokenCacheFor || (e.expires != nil && !now.Before(*e.expires)):
		delete(h.entries, string(hash))
		return Principal{}, false
	}
	p := e.p
	p.Scopes = slices.Clone(p.Scopes)
	return p, true
}

// generation is the gen a lookup reads the store under.
func (h *held) generation() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen
}

// put holds p for hash, read from the store at now under gen, unless something was
// forgotten since.
func (h *held) put(hash []byte, p Principal, expires *time.Time, now time.Time, gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen != h.gen {
		return
	}
	if h.entries == nil || len(h.entries) >= MaxTokensHeld {
		h.entries = map[string]heldToken{}
	}
	p.Scopes = slices.Clone(p.Scopes)
	h.entries[string(hash)] = heldToken{p: p, read: now, expires: expires}
}

// forget drops the tokens of principal id, or every token when id is empty, and turns
// away the puts of lookups already under way.
func (h *held) forget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	if id == "" {
		clear(h.entries)
		return
	}
	for k, e := range h.entries {
		if e.p.ID == id {
			delete(h.entries, k)
		}
	}
}
