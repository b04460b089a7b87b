package mcpserver

import (
	"sync"
	"time"
)

// A call of a name the tool set lacks reads the catalog (read your writes, see lookUp), so a
// client calling made-up names would read the store on every call. The names found
// absent are remembered briefly: every catalog change this process hears of (its own
// writes, the watcher's version move) forgets them all, and AbsentTTL bounds how long a
// workflow published by another process whose notice has not arrived yet stays unseen.

// Limits of the absent-name memory.
const (
	// AbsentTTL is how long a name the catalog lacks is answered as absent without reading
	// the catalog again.
	AbsentTTL = time.Second
	// MaxAbsentNames bounds the names remembered; when full, the memory starts over.
	MaxAbsentNames = 10_000
)

// absentNames remembers, per environment and name, when a lookup found no tool.
type absentNames struct {
	mu    sync.Mutex
	until map[string]time.Time
	// gen moves on every forget, so that a lookup that began before a change does not
	// store its stale answer after it.
	gen uint64
}

func absentKey(env, name string) string { return env + "\x00" + name }

// generation is the memory's generation, read before a lookup starts.
func (a *absentNames) generation() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen
}

// absent reports whether name was found absent from env less than AbsentTTL before now.
func (a *absentNames) absent(env, name string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	until, ok := a.until[absentKey(env, name)]
	return ok && now.Before(until)
}

// remember records name as absent from env, unless the catalog changed since gen.
func (a *absentNames) remember(env, name string, now time.Time, gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gen != a.gen {
		return
	}
	if a.until == nil || len(a.until) >= MaxAbsentNames {
		a.until = map[string]time.Time{}
	}
	a.until[absentKey(env, name)] = now.Add(AbsentTTL)
}

// forget drops every name: the catalog changed.
func (a *absentNames) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	a.until = nil
}
