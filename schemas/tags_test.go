package schemas

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTagsOf(t *testing.T) {
	t.Parallel()
	doc := defWith(t, map[string]any{"tags": []any{"billing", "eu"}})
	d, err := Decode(doc)
	require.NoError(t, err)
	require.Equal(t, d.Tags, TagsOf(doc))
	require.Nil(t, TagsOf(defWith(t, nil)))
	require.Nil(t, TagsOf([]byte("not json")))
}
