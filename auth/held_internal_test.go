package auth

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHeldBounds: at most MaxTokensHeld tokens are held; past it the memory starts again.
// A clock that went back does not extend an entry's life.
func TestHeldBounds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var h held
	for i := range MaxTokensHeld + 5 {
		h.put([]byte(fmt.Sprint(i)), Principal{ID: fmt.Sprint(i)}, nil, now, h.generation())
		require.LessOrEqual(t, len(h.entries), MaxTokensHeld)
	}
	_, ok := h.get([]byte(fmt.Sprint(MaxTokensHeld+4)), now)
	require.True(t, ok)
	_, ok = h.get([]byte(fmt.Sprint(MaxTokensHeld+4)), now.Add(-time.Nanosecond))
	require.False(t, ok, "read in the future of now")

	gen := h.generation()
	h.forget("x")
	h.put([]byte("late"), Principal{ID: "late"}, nil, now, gen)
	_, ok = h.get([]byte("late"), now)
	require.False(t, ok, "a put read before a forget is dropped")
}
