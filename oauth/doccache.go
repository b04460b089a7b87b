package oauth

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Caching of Client ID Metadata Documents (README "Connect a remote assistant"): a
// document is fetched once per its Cache-Control max-age, bounded both ways, so that
// authorize and token requests do not make GoRunner fetch a URL each time.
const (
	// MinClientDocumentTTL is the least a fetched document is kept: also when it says
	// no-store, no-cache or nothing.
	MinClientDocumentTTL = 5 * time.Minute
	// MaxClientDocumentTTL is the most a fetched document is kept, whatever its max-age.
	MaxClientDocumentTTL = 24 * time.Hour
	// MaxCachedClientDocuments bounds how many documents are kept; past it, expired ones
	// go first, then the ones closest to expiring.
	MaxCachedClientDocuments = 1000
)

// docCache keeps resolved document clients by client_id until their TTL ends.
type docCache struct {
	mu      sync.Mutex
	entries map[string]docEntry
}

type docEntry struct {
	client  clientInfo
	expires time.Time
}

func newDocCache() *docCache { return &docCache{entries: map[string]docEntry{}} }

// get returns the client cached for id at now, if any.
func (c *docCache) get(id string, now time.Time) (*clientInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	ci := e.client
	return &ci, true
}

// put keeps ci for ttl from now, making room first when the cache is full.
func (c *docCache) put(id string, ci *clientInfo, ttl time.Duration, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[id]; !ok && len(c.entries) >= MaxCachedClientDocuments {
		c.evict(now)
	}
	c.entries[id] = docEntry{client: *ci, expires: now.Add(ttl)}
}

// evict drops expired entries, or else the one closest to expiring.
func (c *docCache) evict(now time.Time) {
	soonest := ""
	for id, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, id)
		} else if soonest == "" || e.expires.Before(c.entries[soonest].expires) {
			soonest = id
		}
	}
	if len(c.entries) >= MaxCachedClientDocuments {
		delete(c.entries, soonest)
	}
}

// documentTTL is how long to keep a document answered with h: its Cache-Control max-age
// within [MinClientDocumentTTL, MaxClientDocumentTTL], the minimum without one.
func documentTTL(h http.Header) time.Duration {
	ttl := MinClientDocumentTTL
	for _, d := range strings.Split(h.Get("Cache-Control"), ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
		if !strings.EqualFold(name, "max-age") {
			continue
		}
		if secs, err := strconv.ParseInt(strings.Trim(value, `"`), 10, 64); err == nil && secs > 0 {
			ttl = time.Duration(min(secs, int64(MaxClientDocumentTTL/time.Second))) * time.Second
		}
	}
	return min(max(ttl, MinClientDocumentTTL), MaxClientDocumentTTL)
}
