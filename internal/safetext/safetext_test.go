package safetext_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/safetext"
)

func TestUnsafe(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0, '\a', '\t', '\n', '\r', 0x1b, 0x7f, 0x9b, 0x200e, 0x202e, 0x2066, 0x061c} {
		require.True(t, safetext.Unsafe(r), "%U", r)
	}
	for _, r := range []rune{' ', 'a', 'é', 'с', '✓', '日', 0x200b} {
		require.False(t, safetext.Unsafe(r), "%U", r)
	}
}
