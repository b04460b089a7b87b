package limits_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/limits"
)

func TestPage(t *testing.T) {
	for in, want := range map[int]int{-1: limits.DefaultPage, 0: limits.DefaultPage, 1: 1, limits.MaxPage - 1: limits.MaxPage - 1,
		limits.MaxPage: limits.MaxPage, limits.MaxPage + 1: limits.MaxPage} {
		require.Equal(t, want, limits.Page(in), in)
	}
}

func TestExamined(t *testing.T) {
	for in, want := range map[int]int{-1: limits.MaxRunsExamined, 0: limits.MaxRunsExamined, 1: 1,
		limits.MaxRunsExamined: limits.MaxRunsExamined, limits.MaxRunsExamined + 1: limits.MaxRunsExamined} {
		require.Equal(t, want, limits.Examined(in), in)
	}
}
