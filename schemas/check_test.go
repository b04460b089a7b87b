package schemas

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// fiveProblems is testdata/five-problems.yaml: five problems, two that only validation
// finds and three values that do not decode, one of which (a bad duration) used to hide
// all the others. The API's test sends it too.
func fiveProblems(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("testdata/five-problems.yaml")
	require.NoError(t, err)
	return doc
}

// TestCheckListsEveryProblem: a definition with five problems gets five, each with its
// pointer, in one answer, the values that do not decode among them; no problem restates
// a value that did not decode.
func TestCheckListsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := Check(fiveProblems(t), ValidateOptions{})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	paths := []string{}
	for _, p := range ve.Problems {
		paths = append(paths, p.Path)
	}
	require.ElementsMatch(t, []string{"/name", "/tagz", "/steps/0/sleep/duration", "/steps/1/http/method", "/steps/2/id"}, paths, "%v", ve.Problems)
	require.Contains(t, err.Error(), "and 4 more problems")

	_, err = Decode(fiveProblems(t))
	require.ErrorAs(t, err, &ve, "several values that do not decode: each is listed")
	require.Len(t, ve.Problems, 3)

	_, err = Check([]byte("name: [unclosed"), ValidateOptions{})
	var de *DecodeError
	require.ErrorAs(t, err, &de, "a document that is not YAML is one problem")

	d, err := Check([]byte(`{"name":"fine","input":{"type":"object"},"steps":[{"id":"a","set":1}]}`), ValidateOptions{})
	require.NoError(t, err)
	require.Equal(t, "fine", d.Name)
}
