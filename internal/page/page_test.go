package page_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/page"
)

func TestClamp(t *testing.T) {
	for in, want := range map[int]int{-1: page.DefaultLimit, 0: page.DefaultLimit, 1: 1, page.MaxLimit - 1: page.MaxLimit - 1,
		page.MaxLimit: page.MaxLimit, page.MaxLimit + 1: page.MaxLimit} {
		require.Equal(t, want, page.Clamp(in), in)
	}
}
