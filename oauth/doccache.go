package oauth

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Caching of Client ID Metadata Documents (docs/security.md, "OAuth for remote assistants"): a
// document is fetched once per its Cache-Control max-age, bounded both ways, and a failed
// fetch is not tried again for FailedClientDocumentTTL, so that authorize and token
// requests, which anyone may send, do not make GoRunner fetch a URL each time.
const (
	// MinClientDocumentTTL is the least a fetched document is kept: also when it says
	// no-store, no-cache or nothing.
	MinClientDocumentTTL = 5 * time.Minute
	// MaxClientDocumentTTL is the most a fetched document is kept, whatever its max-age.
	MaxClientDocumentTTL = 24 * time.Hour
	// MaxCachedClientDocuments bounds how many documents are kept; past it, expired ones
	// go first, then the ones closest to expiring.
	MaxCachedClientDocuments = 1000
	// FailedClientDocumentTTL is how long a client_id URL whose document could not be
	// fetched or used answers with that failure before it is fetched again: a minute
	// turns a flood of authorize requests naming one URL into one GET a minute, and is
	// short enough that a client that fixes its document, or whose host was briefly
	// down, works again by the time its user retries. Failures are kept apart from
	// documents, MaxCachedClientDocuments of each, so that many failing URLs never push
	// a working client out.
	FailedClientDocumentTTL = time.Minute
)

// docCache keeps, by client_id until their TTL ends, resolved document clients or the
// errors fetching their documents ended in.
type docCache struct {
	mu      sync.Mutex
	entries map[string]docEntry
}

type docEntry struct {
	client  clientInfo
	err     error // the failure kept, or nil
	expires time.Time
}

func newDocCache() *docCache { return &docCache{entries: map[string]docEntry{}} }

// get returns the entry cached for id at now, if any: a client, or a failure (err).
func (c *docCache) get(id string, now time.Time) (docEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || !now.Before(e.expires) {
		return docEntry{}, false
	}
	return e, true
}

// put keeps ci for ttl from now, making room first when the cache is full.
func (c *docCache) put(id string, ci *clientInfo, ttl time.Duration, now time.Time) {
	c.keep(id, docEntry{client: *ci, expires: now.Add(ttl)}, now)
}

// putFailure keeps err for ttl from now, making room first when the cache is full.
func (c *docCache) putFailure(id string, err error, ttl time.Duration, now time.Time) {
	c.keep(id, docEntry{err: err, expires: now.Add(ttl)}, now)
}

func (c *docCache) keep(id string, e docEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[id]; !ok && len(c.entries) >= MaxCachedClientDocuments {
		c.evict(now)
	}
	c.entries[id] = e
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
