package schemas

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateTags(t *testing.T) {
	t.Parallel()
	tags := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf("t%d", i)
		}
		return out
	}
	tests := []struct {
		name string
		tags []any
		path string
	}{
		{"none", nil, ""},
		{"some", []any{"billing", "eu_west-1"}, ""},
		{"at the limit", tags(MaxTags), ""},
		{"one past the limit", tags(MaxTags + 1), "/tags"},
		{"bad charset", []any{"billing", "Billing!"}, "/tags/1"},
		{"repeated", []any{"billing", "billing"}, "/tags/1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			over := map[string]any{}
			if tc.tags != nil {
				over["tags"] = tc.tags
			}
			doc := defWith(t, over)
			d, err := Decode(doc)
			require.NoError(t, err)
			problems := Validate(d, ValidateOptions{})
			if tc.path == "" {
				require.Empty(t, problems)
				require.Equal(t, d.Tags, TagsOf(doc))
				return
			}
			require.Len(t, problems, 1, "%v", problems)
			require.Equal(t, tc.path, problems[0].Path)
		})
	}
}
