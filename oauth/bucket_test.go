package oauth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBucket spends a bucket of 2 a second holding 3, on a clock that moves only when
// told: it refills at its rate, never past its burst, says how long until the next token,
// and gains nothing from a clock that steps back.
func TestBucket(t *testing.T) {
	t.Parallel()
	start := time.Now()
	b := newBucket(2, 3, start)
	steps := []struct {
		at   time.Duration // since start
		ok   bool
		wait time.Duration
	}{
		{0, true, 0}, {0, true, 0}, {0, true, 0},
		{0, false, 500 * time.Millisecond},
		{250 * time.Millisecond, false, 250 * time.Millisecond},
		{500 * time.Millisecond, true, 0},
		{500 * time.Millisecond, false, 500 * time.Millisecond},
		{-time.Hour, false, 500 * time.Millisecond},
		{time.Hour, true, 0}, {time.Hour, true, 0}, {time.Hour, true, 0},
		{time.Hour, false, 500 * time.Millisecond},
	}
	for i, s := range steps {
		ok, wait := b.take(start.Add(s.at))
		require.Equal(t, s.ok, ok, "step %d", i)
		require.Equal(t, s.wait, wait, "step %d", i)
	}
}
