package schemas

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidateMCPStep: an mcp step needs an absolute http(s) url and a tool; its arguments
// are expressions, checked as any other; a timeout is bounded as an http step's.
func TestValidateMCPStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, step string
		want       []string // problem paths
	}{
		{"valid", `{"url":"https://crm.example/mcp","tool":"lookup","arguments":{"id":"${{ input.id }}"}}`, nil},
		{"no url, no tool", `{}`, []string{"/steps/0/mcp/tool", "/steps/0/mcp/url"}},
		{"not http", `{"url":"ftp://crm.example","tool":"t"}`, []string{"/steps/0/mcp/url"}},
		{"an argument reads a step that is not there", `{"url":"https://crm.example/mcp","tool":"t","arguments":{"x":"${{ steps.nope.output }}"}}`, []string{"/steps/0/mcp/arguments/x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, problems, err := Parse([]byte(`{"name":"m","input":{"type":"object"},"steps":[{"id":"call","mcp":`+tc.step+`}]}`), ValidateOptions{})
			require.NoError(t, err)
			var paths []string
			for _, p := range problems {
				paths = append(paths, p.Path)
			}
			slices.Sort(paths)
			require.Equal(t, tc.want, paths, "%v", problems)
		})
	}
}
