package auth

import (
	"sync"
	"time"
)

// Bounds of the last-known-good memory.
const (
	// KnownFor is how long a principal seen with a token is remembered for a store outage.
	KnownFor = 10 * time.Minute
	// maxKnown bounds how many tokens are remembered.
	maxKnown = 10000
)

// known remembers the principals tokens resolved to, so that a request is not refused as
// unauthenticated only because the store cannot be reached (stale-if-error): the store is
// always asked first, so a revocation takes effect on the next request whenever the store
// answers; the memory is used only when it does not.
type known struct {
	mu      sync.Mutex
	entries map[string]knownEntry // by token hash
}

type knownEntry struct {
	p       Principal
	seen    time.Time
	expires *time.Time
}

func (k *known) remember(hash []byte, p Principal, expires *time.Time, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.entries == nil {
		k.entries = map[string]knownEntry{}
	}
	if _, ok := k.entries[string(hash)]; !ok && len(k.entries) >= maxKnown {
		for h := range k.entries {
			delete(k.entries, h)
			break
		}
	}
	k.entries[string(hash)] = knownEntry{p: p, seen: now, expires: expires}
}

func (k *known) recall(hash []byte, now time.Time) (Principal, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.entries[string(hash)]
	if !ok || now.Sub(e.seen) > KnownFor || (e.expires != nil && !now.Before(*e.expires)) {
		return Principal{}, false
	}
	return e.p, true
}

func (k *known) forgetHash(hash []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.entries, string(hash))
}

func (k *known) forgetID(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for h, e := range k.entries {
		if e.p.ID == id {
			delete(k.entries, h)
		}
	}
}
