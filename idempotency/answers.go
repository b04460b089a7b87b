package idempotency

import (
	"bytes"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bounds of the kept answers a Service holds in memory (answers); past either, the first
// held go first.
const (
	// MaxAnswersHeld bounds how many finished keys a Service holds.
	MaxAnswersHeld = 4096
	// MaxAnswersHeldBytes bounds the bytes they hold (answer bodies and headers, keys, the
	// request last replayed); a key holding more than MaxAnswersHeldBytes/256 is not held.
	MaxAnswersHeldBytes = 16 << 20
)

// answers holds the records of finished keys (StateDone, StateTaken) this process wrote or
// read, so that a replay reads no store. Such a record never changes before its ExpiresAt
// in a scope that does not evict its oldest keys: no write touches a live finished key
// (a claim or an admission finds it Existing, Release frees only keys in progress, and
// keys are deleted only once expired or by eviction), so it is held only for requests
// whose Policy never evicts, and never past its ExpiresAt.
//
// Each key also remembers the last request found to carry its fingerprint: a retry with
// the same method, path, query and body has the same Fingerprint, which is then not
// computed again.
type answers struct {
	mu    sync.Mutex
	by    map[heldKey]*held
	order []heldKey // oldest first
	bytes int
}

type heldKey struct{ scope, key string }

type held struct {
	rec  *Record
	req  *Request // a request whose fingerprint is rec.Fingerprint, or nil
	size int
}

// holds reports whether req's key may be answered from memory: its scope never evicts. A
// workflow's scope evicts whatever the policy of the request at hand: its webhook's do.
func holds(req Request) bool {
	return !req.Policy.EvictOldest && !strings.HasPrefix(req.Scope, WorkflowScope(""))
}

// get returns a copy of req's key's record when held and live at now, and whether req is
// the request last found to carry its fingerprint.
func (a *answers) get(req Request, now time.Time) (rec *Record, same bool, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.by[heldKey{req.Scope, req.Key}]
	if !ok {
		return nil, false, false
	}
	if !h.rec.ExpiresAt.After(now) {
		a.dropLocked(heldKey{req.Scope, req.Key})
		return nil, false, false
	}
	return cloneRecord(h.rec), h.req != nil && sameRequest(h.req, &req), true
}

// put holds a copy of rec when it is a finished key of a scope that may be held, small
// enough; fp is req's fingerprint, remembered with req when it is rec's.
func (a *answers) put(req Request, fp string, rec *Record) {
	if rec == nil || (rec.State != StateDone && rec.State != StateTaken) || !holds(req) ||
		rec.Scope != req.Scope || rec.Key != req.Key {
		return
	}
	h := &held{rec: cloneRecord(rec)}
	if fp == rec.Fingerprint {
		r := cloneRequest(req)
		h.req = &r
	}
	h.size = recordBytes(h.rec) + requestBytes(h.req)
	if h.size > MaxAnswersHeldBytes/256 {
		return
	}
	k := heldKey{req.Scope, req.Key}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.by == nil {
		a.by = map[heldKey]*held{}
	}
	if old, ok := a.by[k]; ok {
		a.bytes += h.size - old.size
		a.by[k] = h
		a.trimLocked()
		return
	}
	a.by[k] = h
	a.order = append(a.order, k)
	a.bytes += h.size
	a.trimLocked()
}

// trimLocked drops the first held keys until both bounds hold.
func (a *answers) trimLocked() {
	for len(a.order) > 0 && (len(a.by) > MaxAnswersHeld || a.bytes > MaxAnswersHeldBytes) {
		a.dropLocked(a.order[0])
	}
	// Keys dropped out of turn (expired) leave their place in order; compact it when they
	// are many.
	if len(a.order) > 2*len(a.by)+64 {
		a.order = slices.DeleteFunc(a.order, func(k heldKey) bool { _, ok := a.by[k]; return !ok })
	}
}

// dropLocked forgets k; its place in order goes when it comes first.
func (a *answers) dropLocked(k heldKey) {
	if h, ok := a.by[k]; ok {
		a.bytes -= h.size
		delete(a.by, k)
	}
	for len(a.order) > 0 {
		if _, ok := a.by[a.order[0]]; ok {
			break
		}
		a.order = a.order[1:]
	}
}

// len is how many keys are held, for tests.
func (a *answers) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.by)
}

// sameRequest reports whether a and b are the same request byte for byte, so that their
// fingerprints are equal without computing them.
func sameRequest(a, b *Request) bool {
	return a.Method == b.Method && a.Path == b.Path && bytes.Equal(a.Body, b.Body) &&
		maps.EqualFunc(a.Query, b.Query, slices.Equal)
}

func cloneRequest(r Request) Request {
	return Request{Scope: r.Scope, Key: r.Key, Method: r.Method, Path: r.Path,
		Query: cloneValues(r.Query), Body: bytes.Clone(r.Body), Policy: r.Policy}
}

func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

func cloneRecord(r *Record) *Record {
	c := *r
	c.Header = r.Header.Clone()
	c.Body = bytes.Clone(r.Body)
	return &c
}

// recordBytes is about what r holds.
func recordBytes(r *Record) int {
	return len(r.Scope) + len(r.Key) + len(r.Fingerprint) + len(r.Method) + len(r.Path) + len(r.RunID) +
		headerBytes(r.Header) + len(r.Body) + 128
}

func requestBytes(r *Request) int {
	if r == nil {
		return 0
	}
	return len(r.Method) + len(r.Path) + len(r.Body) + headerBytes(http.Header(r.Query))
}

func headerBytes(h http.Header) int {
	n := 0
	for k, vs := range h {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return n
}
