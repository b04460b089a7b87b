package oauth

import (
	"sync"
	"time"
)

// bucket is a token bucket on the server's clock: it holds at most burst tokens, gains
// rate a second, and each event it allows takes one.
type bucket struct {
	rate, burst float64
	mu          sync.Mutex
	tokens      float64
	last        time.Time // when tokens was last topped up
}

// newBucket returns a full bucket as of now.
func newBucket(rate float64, burst int, now time.Time) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

// take takes a token at now if there is one; when not, it says how long until there is.
// A clock that steps back adds nothing.
func (b *bucket) take(now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}
