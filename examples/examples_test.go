package examples_test

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/examples"
	"github.com/gorunner/gorunner/schemas"
)

func TestExamplesAreValid(t *testing.T) {
	t.Parallel()
	files, err := fs.ReadDir(examples.Workflows(), ".")
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range files {
		data, err := fs.ReadFile(examples.Workflows(), f.Name())
		require.NoError(t, err)
		d, problems, err := schemas.Parse(data, schemas.ValidateOptions{})
		require.NoError(t, err, f.Name())
		require.Empty(t, problems, f.Name())
		names[d.Name] = true
		if d.Name == "approval" {
			require.NotNil(t, d.Steps[0].Hook.Ask, "approval asks through elicitation")
		}
	}
	require.True(t, names["long-report"])
}
