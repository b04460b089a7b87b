package names_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/internal/names"
)

func TestValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want bool
	}{
		{"greet", true},
		{"a", true},
		{"0-order_2", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"-greet", false},
		{"_greet", false},
		{"Greet", false},
		{"greet.v2", false},
		{"greet\n", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, names.Valid(tt.name), "%q", tt.name)
	}
}
