package oauth

import (
	"sync"
	"time"
)

// maxLimited bounds how many client addresses the limiter tracks; past it, windows that
// ended are dropped first.
const maxLimited = 10000

// limiter allows n events per window per key (a fixed window: simple and enough to stop
// a registration flood from one address).
type limiter struct {
	n      int
	window time.Duration
	mu     sync.Mutex
	seen   map[string]*limitWindow
}

type limitWindow struct {
	start time.Time
	count int
}

func newLimiter(n int, window time.Duration) *limiter {
	return &limiter{n: n, window: window, seen: map[string]*limitWindow{}}
}

// allow counts one event of key at now and reports whether it is within the limit; when
// not, it also says when the window ends.
func (l *limiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.seen[key]
	if !ok || now.Sub(w.start) >= l.window {
		if !ok && len(l.seen) >= maxLimited {
			l.prune(now)
		}
		w = &limitWindow{start: now}
		l.seen[key] = w
	}
	if w.count >= l.n {
		return false, w.start.Add(l.window).Sub(now)
	}
	w.count++
	return true, 0
}

func (l *limiter) prune(now time.Time) {
	for k, w := range l.seen {
		if now.Sub(w.start) >= l.window {
			delete(l.seen, k)
		}
	}
	for k := range l.seen {
		if len(l.seen) < maxLimited {
			break
		}
		delete(l.seen, k)
	}
}
