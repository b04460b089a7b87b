package tools_test

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/tools"
)

// TestUnknownSentences: the answer to an unknown tool is sentences, with or without names
// to suggest.
func TestUnknownSentences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		closest []string
		want    string
	}{
		{nil, `there is no tool named \"greet\". Call one of the tools tools/list gives.`},
		{[]string{"greet"}, `there is no tool named \"gret\"; did you mean \"greet\"? Call one of the tools tools/list gives.`},
	}
	for _, tc := range tests {
		name := "greet"
		if tc.closest != nil {
			name = "gret"
		}
		res := tools.Unknown("tool", name, tc.closest, false)
		require.True(t, res.IsError)
		require.Contains(t, res.Content[0].(mcp.TextContent).Text, tc.want)
	}
}
